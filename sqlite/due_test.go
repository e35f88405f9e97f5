package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestDueBeforeOutsideStoredYears: a bound past year 9999 means
// "everything waiting", one before year 0 "nothing", instead of an error
// or a text comparison gone wrong.
func TestDueBeforeOutsideStoredYears(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	for i := range 3 {
		op := &pollwarden.Operation{ID: fmt.Sprintf("op-%d", i), Contract: "c", Phase: pollwarden.PhaseWaiting,
			StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now.Add(time.Duration(i) * time.Hour)}
		if err := s.OperationCreate(context.Background(), op, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		bound time.Time
		want  int
	}{
		{time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), 3},
		{time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), 0},
	} {
		ops, err := s.OperationList(context.Background(), pollwarden.ListParams{DueBefore: tc.bound})
		if err != nil || len(ops) != tc.want {
			t.Errorf("DueBefore %v: %d operations, %v; want %d", tc.bound, len(ops), err, tc.want)
		}
	}
}

// TestDueQueryWalksTheIndex: the due query is served, in order, by the
// partial index, without sorting every waiting row.
func TestDueQueryWalksTheIndex(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, args := s.ListQuery(pollwarden.ListParams{DueBefore: time.Now(), Limit: 10, Phase: pollwarden.PhaseWaiting})
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "USING INDEX operations_due") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("query plan %q, want a search of operations_due without a sort", got)
	}
}
