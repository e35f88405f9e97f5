package storetest

import (
	"fmt"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// testListOwner checks that ListParams.Owner filters in the store, before
// Limit: an agent's newest operations are found however many newer ones
// others have, and an owner matches exactly (no prefix, no case folding),
// which is what keeps one agent's list from showing another's.
func testListOwner(t *testing.T, s pollwarden.Store) {
	owners := []string{"build-agent", "other", "build-agent", "", "Build-agent", "build-agent-2", "other", "other"}
	for i, o := range owners {
		op := newOp(fmt.Sprintf("op-%d", i))
		op.Owner = o
		if i == 2 {
			op.Phase = pollwarden.PhaseEscalated
		}
		create(t, s, op)
	}
	for _, tc := range []struct {
		p    pollwarden.ListParams
		want string
	}{
		{pollwarden.ListParams{Owner: "build-agent"}, "op-2 op-0 "},
		// The three newest belong to others: a filter applied after the
		// LIMIT would return nothing here.
		{pollwarden.ListParams{Owner: "build-agent", Limit: 1}, "op-2 "},
		{pollwarden.ListParams{Owner: "build-agent", Phase: pollwarden.PhaseWaiting}, "op-0 "},
		{pollwarden.ListParams{Owner: "other", Limit: 2}, "op-7 op-6 "},
		{pollwarden.ListParams{Owner: "nobody"}, ""},
		{pollwarden.ListParams{Owner: "build"}, ""},
		{pollwarden.ListParams{}, "op-7 op-6 op-5 op-4 op-3 op-2 op-1 op-0 "},
	} {
		ops, err := s.OperationList(t.Context(), tc.p)
		if err != nil {
			t.Fatalf("OperationList(%+v): %v", tc.p, err)
		}
		got := ""
		for _, op := range ops {
			got += op.ID + " "
			if op.Owner != tc.p.Owner && tc.p.Owner != "" {
				t.Errorf("OperationList(%+v) returned %s of owner %q", tc.p, op.ID, op.Owner)
			}
		}
		if got != tc.want {
			t.Errorf("OperationList(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// testSaveKeepsOwner checks that the owner column follows the record
// through saves and claims, so a list by owner still finds it after the
// operation has been polled.
func testSaveKeepsOwner(t *testing.T, s pollwarden.Store) {
	op := newOp("op-1")
	op.Owner = "build-agent"
	create(t, s, op)
	got := get(t, s, "op-1")
	got.Phase = pollwarden.PhaseEscalated
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: got, Now: t0}); err != nil {
		t.Fatalf("OperationSave: %v", err)
	}
	ops, err := s.OperationList(t.Context(), pollwarden.ListParams{Owner: "build-agent", Phase: pollwarden.PhaseEscalated})
	if err != nil || len(ops) != 1 || ops[0].Owner != "build-agent" {
		t.Fatalf("after a save, list by owner: %v, %v", ops, err)
	}
}
