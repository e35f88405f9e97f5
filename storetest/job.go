package storetest

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

// testListJob: a provider callback finds the operations of one contract
// and one provider job id, both matched exactly, whatever else the store
// holds; neither another contract's job of the same id nor a job whose id
// only starts the same.
func testListJob(t *testing.T, s pollwarden.Store) {
	add := func(id, contract, job string, phase pollwarden.Phase) {
		op := newOp(id)
		op.Contract, op.ProviderJobID, op.Phase = contract, job, phase
		create(t, s, op)
	}
	add("op-0", "openai-batch", "batch_1", pollwarden.PhaseWaiting)
	add("op-1", "openai-batch", "batch_10", pollwarden.PhaseWaiting)
	add("op-2", "other", "batch_1", pollwarden.PhaseWaiting)
	add("op-3", "openai-batch", "batch_1", pollwarden.PhaseSucceeded)
	add("op-4", "openai-batch", "BATCH_1", pollwarden.PhaseWaiting)
	for _, tc := range []struct {
		p    pollwarden.ListParams
		want string
	}{
		{pollwarden.ListParams{Contract: "openai-batch", ProviderJobID: "batch_1"}, "op-3 op-0 "},
		{pollwarden.ListParams{Contract: "openai-batch", ProviderJobID: "batch_1", Phase: pollwarden.PhaseWaiting}, "op-0 "},
		{pollwarden.ListParams{Contract: "other", ProviderJobID: "batch_1"}, "op-2 "},
		{pollwarden.ListParams{Contract: "openai-batch", ProviderJobID: "batch"}, ""},
		{pollwarden.ListParams{Contract: "openai-batch"}, "op-4 op-3 op-1 op-0 "},
		{pollwarden.ListParams{ProviderJobID: "batch_1"}, "op-3 op-2 op-0 "},
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
