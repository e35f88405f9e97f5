package storetest

import (
	"fmt"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// testListHeldBy checks that ListParams.HeldBy and IncidentHeld find an
// incident's held operations in the store (held_by, kept in step by every
// save): only those waiting with the delay source provider_incident under
// that incident; a save that ends the hold (a new delay source, or a
// finished phase) drops the operation even though its record keeps
// HeldBy; a count stops at its limit.
func testListHeldBy(t *testing.T, s pollwarden.Store) {
	const inc, other = "inc-00000000000000aa", "inc-00000000000000bb"
	for i := range 6 {
		op := newOp(fmt.Sprintf("op-%d", i))
		switch i {
		case 0, 1, 2, 3:
			op.NextPollSource, op.HeldBy = pollwarden.DelayProviderIncident, inc
		case 4:
			op.NextPollSource, op.HeldBy = pollwarden.DelayProviderIncident, other
		case 5:
			// HeldBy left over from a hold that is over.
			op.HeldBy = inc
		}
		create(t, s, op)
	}
	// op-2's hold ends: its next request goes with a local backoff.
	op := get(t, s, "op-2")
	op.NextPollSource = pollwarden.DelayLocalBackoff
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(1)}); err != nil {
		t.Fatalf("save op-2: %v", err)
	}
	// op-3 finishes while held.
	op = get(t, s, "op-3")
	op.Phase, op.Reason = pollwarden.PhaseExpired, pollwarden.ReasonDeadlineExceeded
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(1)}); err != nil {
		t.Fatalf("save op-3: %v", err)
	}
	list := func(p pollwarden.ListParams) string {
		t.Helper()
		ops, err := s.OperationList(t.Context(), p)
		if err != nil {
			t.Fatalf("OperationList(%+v): %v", p, err)
		}
		got := ""
		for _, op := range ops {
			got += op.ID + " "
		}
		return got
	}
	for _, tc := range []struct {
		p    pollwarden.ListParams
		want string
	}{
		{pollwarden.ListParams{HeldBy: inc}, "op-1 op-0 "},
		{pollwarden.ListParams{HeldBy: inc, Phase: pollwarden.PhaseWaiting, Limit: 1}, "op-1 "},
		{pollwarden.ListParams{HeldBy: other}, "op-4 "},
		{pollwarden.ListParams{HeldBy: "inc-unknown"}, ""},
	} {
		if got := list(tc.p); got != tc.want {
			t.Errorf("OperationList(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
	// A hold that starts with a save is found too.
	op = get(t, s, "op-5")
	op.NextPollSource = pollwarden.DelayProviderIncident
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(2)}); err != nil {
		t.Fatalf("save op-5: %v", err)
	}
	if got, want := list(pollwarden.ListParams{HeldBy: inc}), "op-5 op-1 op-0 "; got != want {
		t.Errorf("after op-5 is held: OperationList(HeldBy) = %q, want %q", got, want)
	}
	n, err := s.IncidentHeld(t.Context(), []string{inc, other, "inc-unknown"}, 100)
	if err != nil {
		t.Fatalf("IncidentHeld: %v", err)
	}
	if n[inc] != 3 || n[other] != 1 || n["inc-unknown"] != 0 {
		t.Errorf("IncidentHeld = %v, want %s:3 %s:1 inc-unknown:0", n, inc, other)
	}
	n, err = s.IncidentHeld(t.Context(), []string{inc}, 2)
	if err != nil {
		t.Fatalf("IncidentHeld with limit 2: %v", err)
	}
	if n[inc] != 2 {
		t.Errorf("IncidentHeld with limit 2 = %d, want 2 (the count stops at its limit)", n[inc])
	}
}
