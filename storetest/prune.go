package storetest

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// testPrune: only operations that finished before the cutoff lose their
// record; their events keep their place and hashes with the payload
// dropped, so the whole chain still verifies; a waiting, submitting,
// escalated or cancelling operation is never pruned, whatever its times;
// a dry run changes nothing; a pruned id stays taken.
func testPrune(t *testing.T, s pollwarden.Store) {
	p, ok := s.(pollwarden.Pruner)
	if !ok {
		t.Fatalf("%T does not implement pollwarden.Pruner", s)
	}
	old := ptr(t0.Add(time.Minute))
	ops := map[string]struct {
		phase    pollwarden.Phase
		finished *time.Time
		pruned   bool
	}{
		"done-old":   {pollwarden.PhaseSucceeded, old, true},
		"failed-old": {pollwarden.PhaseFailed, old, true},
		"done-new":   {pollwarden.PhaseSucceeded, ptr(t0.Add(3 * time.Hour)), false},
		"escalated":  {pollwarden.PhaseEscalated, old, false},
		"waiting":    {pollwarden.PhaseWaiting, old, false},
		"cancelling": {pollwarden.PhaseCancelling, old, false},
		"submitting": {pollwarden.PhaseSubmitting, old, false},
	}
	names := []string{"done-old", "escalated", "failed-old", "waiting", "done-new", "cancelling", "submitting"}
	for _, id := range names {
		create(t, s, newOp(id))
	}
	// A second event each, interleaved across operations in the chain.
	for _, id := range names {
		op := get(t, s, id)
		op.Phase, op.FinishedAt = ops[id].phase, ops[id].finished
		ev := []pollwarden.Event{{At: at(time.Minute), Kind: pollwarden.EventFinished, Data: pollwarden.EventData{State: string(op.Phase)}}}
		if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(time.Minute), Events: ev}); err != nil {
			t.Fatal(err)
		}
	}
	before := verifyStore(t, s)
	for _, e := range before {
		if e.PayloadDigest != audit.PayloadDigest(e.Payload) {
			t.Fatalf("event pos %d: payload digest %q, want the SHA-256 of its payload: a prune could not keep what the hash binds", e.Pos, e.PayloadDigest)
		}
	}
	cutoff := t0.Add(time.Hour)

	dry, err := p.OperationPrune(t.Context(), pollwarden.PruneParams{FinishedBefore: cutoff, DryRun: true})
	if err != nil || dry.Operations != 2 || dry.Events != 4 {
		t.Fatalf("dry run: %+v %v, want 2 operations and 4 events", dry, err)
	}
	same(t, "events after a dry run", verifyStore(t, s), before)

	res, err := p.OperationPrune(t.Context(), pollwarden.PruneParams{FinishedBefore: cutoff})
	if err != nil || res != dry {
		t.Fatalf("prune: %+v %v, want %+v", res, err, dry)
	}
	after := verifyStore(t, s)
	if len(after) != len(before) {
		t.Fatalf("%d events after the prune, %d before: the chain must keep every place", len(after), len(before))
	}
	for i, e := range after {
		b := before[i]
		if e.Pos != b.Pos || e.Hash != b.Hash || e.PrevHash != b.PrevHash || e.OperationID != b.OperationID || e.Seq != b.Seq || e.Kind != b.Kind ||
			!e.At.Equal(b.At) || e.PayloadDigest != b.PayloadDigest {
			t.Fatalf("event pos %d changed beyond its payload: %+v, was %+v", e.Pos, e, b)
		}
		if audit.Pruned(e) != ops[e.OperationID].pruned {
			t.Fatalf("event pos %d of %s: pruned %v", e.Pos, e.OperationID, audit.Pruned(e))
		}
	}
	for id, o := range ops {
		_, err := s.OperationGet(t.Context(), id)
		if o.pruned != isErr(err, pollwarden.ErrNotFound) {
			t.Fatalf("OperationGet(%q) after the prune: %v (pruned %v)", id, err, o.pruned)
		}
	}
	if pc, ok := s.(audit.PrunedChecker); ok {
		if ce, err := pc.PrunedMisplaced(t.Context()); ce != nil || err != nil {
			t.Fatalf("a real prune's markers reported out of place: %v %v", ce, err)
		}
	}
	if again, err := p.OperationPrune(t.Context(), pollwarden.PruneParams{FinishedBefore: cutoff}); err != nil || again.Operations != 0 {
		t.Fatalf("second prune: %+v %v", again, err)
	}

	// A pruned id stays taken: creating it again fails as for a stored
	// operation, and its trail is still only the pruned events.
	if err := s.OperationCreate(t.Context(), newOp("done-old"), []pollwarden.Event{{At: t0, Kind: pollwarden.EventSubmitted}}); !isErr(err, pollwarden.ErrPruned) {
		t.Fatalf("creating the pruned id done-old again: %v, want ErrPruned", err)
	}
	if _, err := s.OperationGet(t.Context(), "done-old"); !isErr(err, pollwarden.ErrNotFound) {
		t.Fatalf("a refused create left a record: %v", err)
	}
	evs := events(t, s, "done-old")
	if len(evs) != 2 || !audit.Pruned(evs[0]) || !audit.Pruned(evs[1]) {
		t.Fatalf("events of the pruned id after a refused create: %+v", evs)
	}
	verifyStore(t, s)
}
