package storetest

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// testIndexedColumnsFollowRecord: every filtered list (phase, due time,
// contract and provider job, owner) follows each change of the field it
// filters on, whether a save or a claim made it and whatever else changed
// or did not: a write that leaves a filtered field alone must not leave a
// stale copy of one it changed, and one that changes nothing filtered
// must not lose the copies.
func testIndexedColumnsFollowRecord(t *testing.T, s pollwarden.Store) {
	op := newOp("op-1")
	op.Owner = "alice"
	create(t, s, op)
	create(t, s, newOp("op-2"))
	// wants checks each filtered list for op-1 as the record now stands.
	wants := func(step string) {
		t.Helper()
		cur := get(t, s, "op-1")
		for _, tc := range []struct {
			what string
			p    pollwarden.ListParams
			in   bool
		}{
			{"its phase", pollwarden.ListParams{Phase: cur.Phase}, true},
			{"another phase", pollwarden.ListParams{Phase: pollwarden.PhaseFailed}, cur.Phase == pollwarden.PhaseFailed},
			{"its job", pollwarden.ListParams{Contract: cur.Contract, ProviderJobID: cur.ProviderJobID}, true},
			{"its former job", pollwarden.ListParams{Contract: "report-export", ProviderJobID: "job-op-1"},
				cur.Contract == "report-export" && cur.ProviderJobID == "job-op-1"},
			{"its owner", pollwarden.ListParams{Owner: cur.Owner}, true},
			{"due at its next poll", pollwarden.ListParams{DueBefore: cur.NextPollAt}, cur.Phase.Polling()},
			{"due just before it", pollwarden.ListParams{DueBefore: cur.NextPollAt.Add(-time.Nanosecond)}, false},
		} {
			got := false
			for _, o := range listOps(t, s, tc.p) {
				got = got || o.ID == "op-1"
			}
			if got != tc.in {
				t.Errorf("after %s: op-1 in the list of %s (%+v) = %v, want %v", step, tc.what, tc.p, got, tc.in)
			}
		}
	}
	wants("create")
	steps := []struct {
		what   string
		change func(op *pollwarden.Operation)
	}{
		{"a save changing nothing filtered", func(op *pollwarden.Operation) { op.CompletedPolls++ }},
		{"a save moving the next poll", func(op *pollwarden.Operation) { op.NextPollAt = at(time.Minute) }},
		{"a save giving the provider job", func(op *pollwarden.Operation) { op.ProviderJobID = "job-42" }},
		{"a save moving the contract and the next poll", func(op *pollwarden.Operation) {
			op.Contract, op.NextPollAt = "other-export", at(2*time.Minute)
		}},
		{"a save changing the owner", func(op *pollwarden.Operation) { op.Owner = "bob" }},
		{"a save ending it", func(op *pollwarden.Operation) { op.Phase = pollwarden.PhaseFailed }},
		{"a save reopening it", func(op *pollwarden.Operation) { op.Phase = pollwarden.PhaseWaiting }},
	}
	for _, st := range steps {
		op := get(t, s, "op-1")
		st.change(op)
		if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0}); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		wants(st.what)
	}
	for i, st := range steps {
		now := at(time.Duration(i+1) * time.Hour)
		_, l, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: now, TTL: ttl,
			Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
				st.change(op)
				return op, nil
			}})
		if err != nil || l == nil {
			t.Fatalf("claim with %s: lease %v, %v", st.what, l, err)
		}
		// A due listing leaves out a leased operation: look once freed.
		if err := s.LeaseRelease(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		wants("a claim with " + st.what)
	}
	if other := get(t, s, "op-2"); other.Contract != "report-export" || other.Version != 1 {
		t.Errorf("op-2 changed: %+v", other)
	}
}

func listOps(t *testing.T, s pollwarden.Store, p pollwarden.ListParams) []*pollwarden.Operation {
	t.Helper()
	ops, err := s.OperationList(t.Context(), p)
	if err != nil {
		t.Fatalf("OperationList(%+v): %v", p, err)
	}
	return ops
}
