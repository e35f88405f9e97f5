package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// testListReasonText checks that ListParams.Reason and Text filter in the
// store, before Limit (the console's search): the match is found however
// many newer operations do not match, Text ignores case, looks in the id,
// the provider job id, the contract and the last provider state, and
// takes % and _ as themselves.
func testListReasonText(t *testing.T, s pollwarden.Store) {
	for i := range 6 {
		op := newOp(fmt.Sprintf("op-%d", i))
		op.ProviderJobID = fmt.Sprintf("job-%d", i)
		switch i {
		case 0:
			op.Phase, op.Reason, op.LastState = pollwarden.PhaseFailed, pollwarden.ReasonProviderFailure, "Quota_Exceeded"
		case 1:
			op.ProviderJobID = "Batch-ALPHA"
		case 2:
			op.Phase, op.Reason = pollwarden.PhaseExpired, pollwarden.ReasonDeadlineExceeded
		case 3:
			op.ProviderJobID = "50%-done"
		}
		create(t, s, op)
	}
	for _, tc := range []struct {
		p    pollwarden.ListParams
		want string
	}{
		// The newest operations do not match: a filter applied after the
		// LIMIT would return nothing here.
		{pollwarden.ListParams{Reason: pollwarden.ReasonProviderFailure, Limit: 1}, "op-0 "},
		{pollwarden.ListParams{Reason: pollwarden.ReasonDeadlineExceeded}, "op-2 "},
		{pollwarden.ListParams{Text: "alpha", Limit: 1}, "op-1 "},
		{pollwarden.ListParams{Text: "quota_exc"}, "op-0 "},
		{pollwarden.ListParams{Text: "quota%exc"}, ""},
		{pollwarden.ListParams{Text: "50%"}, "op-3 "},
		{pollwarden.ListParams{Text: "OP-4"}, "op-4 "},
		{pollwarden.ListParams{Text: "job-5", Reason: pollwarden.ReasonProviderFailure}, ""},
		// Phases: any of them, in one query, before the limit.
		{pollwarden.ListParams{Phases: []pollwarden.Phase{pollwarden.PhaseFailed, pollwarden.PhaseExpired}}, "op-2 op-0 "},
		{pollwarden.ListParams{Phases: []pollwarden.Phase{pollwarden.PhaseFailed, pollwarden.PhaseExpired}, Limit: 1}, "op-2 "},
	} {
		ops, err := s.OperationList(t.Context(), tc.p)
		if err != nil {
			t.Fatalf("OperationList(%+v): %v", tc.p, err)
		}
		got := ""
		for _, op := range ops {
			got += op.ID + " "
		}
		if got != tc.want {
			t.Errorf("OperationList(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// testCounts checks the count by phase a store gives the metrics gauges
// (OperationCounts, one grouped query instead of every record read): it
// agrees with the records, phase by phase.
func testCounts(t *testing.T, s pollwarden.Store) {
	c, ok := s.(interface {
		OperationCounts(ctx context.Context) (map[pollwarden.Phase]int, error)
	})
	if !ok {
		t.Fatalf("%T does not count operations by phase: the gauges would read every record per scrape", s)
	}
	phases := []pollwarden.Phase{pollwarden.PhaseWaiting, pollwarden.PhaseWaiting, pollwarden.PhaseEscalated,
		pollwarden.PhaseSucceeded, pollwarden.PhaseWaiting}
	for i, p := range phases {
		op := newOp(fmt.Sprintf("op-%d", i))
		op.Phase = p
		create(t, s, op)
	}
	got, err := c.OperationCounts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[pollwarden.Phase]int{pollwarden.PhaseWaiting: 3, pollwarden.PhaseEscalated: 1, pollwarden.PhaseSucceeded: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("OperationCounts = %v, want %v", got, want)
	}
}
