package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// TestHeldByQueriesUseTheIndex: an incident's held operations are listed
// and counted through the partial index operations_held_by, never by a
// scan of the operations.
func TestHeldByQueriesUseTheIndex(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "; ")
	}
	q, args := s.ListQuery(pollwarden.ListParams{Phase: pollwarden.PhaseWaiting, HeldBy: "inc-0123456789abcdef"})
	if got := plan(q, args...); !strings.Contains(got, "operations_held_by") || strings.Contains(got, "SCAN operations") {
		t.Errorf("held list plan %q, want a search of operations_held_by", got)
	}
	if got := plan(sqlstore.HeldCountSQL, "inc-0123456789abcdef", 10); !strings.Contains(got, "operations_held_by") {
		t.Errorf("held count plan %q, want a search of operations_held_by", got)
	}
}
