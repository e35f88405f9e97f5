package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/postgres"
)

// TestPruneTamperDetected: on PostgreSQL, the database refuses a prune's
// change outside a finished operation and the deletion of a record whose
// events are not pruned; after a real prune the chain verifies, and
// tampering with what is left, kept or pruned, is still caught.
func TestPruneTamperDetected(t *testing.T) {
	schema := freshSchema(t)
	s := openIn(t, schema, postgres.Options{})
	defer s.Close()
	old := time.Now().Add(-48 * time.Hour)
	for _, id := range []string{"done", "live"} {
		if err := s.OperationCreate(t.Context(), newOp(id, old), []pollwarden.Event{{At: old, Kind: pollwarden.EventSubmitted}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"done", "live", "done", "live"} {
		op, err := s.OperationGet(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if id == "done" {
			op.Phase, op.FinishedAt = pollwarden.PhaseSucceeded, &old
		}
		ev := []pollwarden.Event{{At: old, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{State: "running"}}}
		if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: old, Events: ev}); err != nil {
			t.Fatal(err)
		}
	}
	conn := rawConn(t)
	for _, q := range []string{
		"UPDATE %s.events SET payload = convert_to('pruned', 'UTF8') WHERE operation_id = 'live'",
		"DELETE FROM %s.operations WHERE id = 'done'",
		"UPDATE %s.events SET payload = convert_to('{}', 'UTF8') WHERE operation_id = 'done'",
		// A prune keeps the digest its hash covers.
		"UPDATE %s.events SET payload = convert_to('pruned', 'UTF8'), payload_digest = '' WHERE operation_id = 'done'",
	} {
		if _, err := conn.Exec(t.Context(), fmt.Sprintf(q, schema)); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want it refused", q, err)
		}
	}
	res, err := s.OperationPrune(t.Context(), pollwarden.PruneParams{FinishedBefore: time.Now().Add(-24 * time.Hour)})
	if err != nil || res.Operations != 1 || res.Events != 3 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	walk := func() error {
		var v audit.Verifier
		err := v.Walk(t.Context(), s, 2)
		if err == nil && v.Pruned() != 3 {
			t.Fatalf("%d pruned events verified, want 3", v.Pruned())
		}
		return err
	}
	if err := walk(); err != nil {
		t.Fatalf("after the prune: %v", err)
	}
	if _, err := conn.Exec(t.Context(), fmt.Sprintf("ALTER TABLE %s.events DISABLE TRIGGER USER", schema)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ edit, undo, want string }{
		{"UPDATE %s.events SET kind = 'decision' WHERE operation_id = 'live' AND seq = 2",
			"UPDATE %s.events SET kind = 'response_received' WHERE operation_id = 'live' AND seq = 2", audit.ProblemHash},
		// A pruned event's hash is recomputed from what the prune kept.
		{"UPDATE %s.events SET hash = 'x' || hash WHERE operation_id = 'done' AND seq = 2",
			"UPDATE %s.events SET hash = substr(hash, 2) WHERE operation_id = 'done' AND seq = 2", audit.ProblemHash},
		{"UPDATE %s.events SET kind = 'decision' WHERE operation_id = 'done' AND seq = 2",
			"UPDATE %s.events SET kind = 'response_received' WHERE operation_id = 'done' AND seq = 2", audit.ProblemHash},
		{"UPDATE %s.events SET at = '2001-01-01T00:00:00Z', payload_digest = 'x' || payload_digest WHERE operation_id = 'done' AND seq = 1",
			"UPDATE %s.events SET at = (SELECT at FROM %[1]s.events WHERE operation_id = 'live' AND seq = 1), payload_digest = substr(payload_digest, 2) WHERE operation_id = 'done' AND seq = 1", audit.ProblemHash},
	} {
		if _, err := conn.Exec(t.Context(), fmt.Sprintf(tc.edit, schema)); err != nil {
			t.Fatal(err)
		}
		var ce *audit.ChainError
		if err := walk(); !errors.As(err, &ce) || ce.Problem != tc.want {
			t.Errorf("after %q: %v, want %s", tc.edit, err, tc.want)
		}
		if _, err := conn.Exec(t.Context(), fmt.Sprintf(tc.undo, schema)); err != nil {
			t.Fatal(err)
		}
		if err := walk(); err != nil {
			t.Fatalf("after undoing %q: %v", tc.edit, err)
		}
	}
}

// TestPrunedMarkerOutOfPlace: on PostgreSQL, with the triggers disabled
// as someone holding the database could, the events of an escalated
// operation blanked to the pruned marker still link, and PrunedMisplaced
// (what audit verify asks after the walk) names the first of them.
func TestPrunedMarkerOutOfPlace(t *testing.T) {
	schema := freshSchema(t)
	s := openIn(t, schema, postgres.Options{})
	defer s.Close()
	old := time.Now().Add(-48 * time.Hour)
	if err := s.OperationCreate(t.Context(), newOp("esc", old), []pollwarden.Event{{At: old, Kind: pollwarden.EventSubmitted}}); err != nil {
		t.Fatal(err)
	}
	op, err := s.OperationGet(t.Context(), "esc")
	if err != nil {
		t.Fatal(err)
	}
	op.Phase = pollwarden.PhaseEscalated
	ev := []pollwarden.Event{{At: old, Kind: pollwarden.EventDecision, Data: pollwarden.EventData{Option: "extend"}},
		{At: old, Kind: pollwarden.EventEscalated}}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: old, Events: ev}); err != nil {
		t.Fatal(err)
	}
	if ce, err := s.PrunedMisplaced(t.Context()); ce != nil || err != nil {
		t.Fatalf("before tampering: %v %v", ce, err)
	}
	conn := rawConn(t)
	for _, q := range []string{
		"ALTER TABLE %s.events DISABLE TRIGGER USER",
		"UPDATE %s.events SET payload = convert_to('pruned', 'UTF8') WHERE operation_id = 'esc' AND seq = 2",
	} {
		if _, err := conn.Exec(t.Context(), fmt.Sprintf(q, schema)); err != nil {
			t.Fatal(err)
		}
	}
	var v audit.Verifier
	if err := v.Walk(t.Context(), s, 10); err != nil || v.Pruned() != 1 {
		t.Fatalf("the walk alone: %v, %d pruned; it cannot tell, the check after it must", err, v.Pruned())
	}
	ce, err := s.PrunedMisplaced(t.Context())
	if err != nil || ce == nil || ce.OperationID != "esc" || ce.Seq != 2 || ce.Problem != audit.ProblemPruned {
		t.Fatalf("PrunedMisplaced: %+v %v, want operation esc seq 2", ce, err)
	}
}
