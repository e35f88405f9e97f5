package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestGroupStatementsSeekByKey: a group's read of many rows and its
// multi-row UPDATEs find each operation by its key, never by scanning the
// operations table: a group must cost its rows, not the store's size.
func TestGroupStatementsSeekByKey(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range s.GroupStatements() {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = `["a"]`
		}
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, "SEARCH operations USING") || strings.Contains(got, "SCAN operations") {
			t.Errorf("plan of %q:\n%s\nwant operations searched by key", q, got)
		}
	}
}
