package sqlstore

import (
	"slices"

	"github.com/pollwarden/pollwarden"
)

// mergeDue answers a due-work listing (p.DueBefore set) from one query per
// phase a scheduler steps, waiting and cancelling (only p.Phase's when it
// is set): list runs the query for one phase, oldest due first, with
// p.Limit. The answers are merged, oldest due first, and cut to p.Limit.
// Each driver serves the waiting query from its partial index; cancelling
// operations are few, so their own query stays cheap.
func mergeDue(p pollwarden.ListParams, list func(pollwarden.Phase) ([]*pollwarden.Operation, error)) ([]*pollwarden.Operation, error) {
	var out []*pollwarden.Operation
	for _, ph := range []pollwarden.Phase{pollwarden.PhaseWaiting, pollwarden.PhaseCancelling} {
		if p.Phase != "" && p.Phase != ph {
			continue
		}
		ops, err := list(ph)
		if err != nil {
			return nil, err
		}
		out = append(out, ops...)
	}
	slices.SortStableFunc(out, func(a, b *pollwarden.Operation) int { return a.NextPollAt.Compare(b.NextPollAt) })
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}
