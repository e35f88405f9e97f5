package controller

import (
	"context"
	"errors"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// callbackFanout bounds how many operations one callback may wake: one
// provider job is normally one operation, and a callback must not turn
// into an unbounded walk of the store.
const callbackFanout = 16

// Callback applies a verified provider callback ("job jobID ended") to the
// waiting operations of contract ct with that provider job id: each is
// moved to one status request as soon as its gates allow (policy.Callback),
// saved with its audit event, and the scheduler told through OnChange. It
// returns how many were woken; an unknown job wakes none and is not an
// error, so the caller can answer alike and reveal nothing. The callback's
// body plays no part: the status request decides the outcome.
func (c *Controller) Callback(ctx context.Context, ct *pollwarden.Contract, jobID string) (woken int, err error) {
	ops, err := c.store.OperationList(ctx, pollwarden.ListParams{
		Contract: ct.Name, ProviderJobID: jobID, Phase: pollwarden.PhaseWaiting, Limit: callbackFanout,
	})
	if err != nil {
		return 0, err
	}
	for _, listed := range ops {
		id := listed.ID
		op, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
			op, err := c.store.OperationGet(ctx, id)
			if err != nil {
				return nil, err
			}
			if policy.CheckContract(op, ct) != nil {
				return nil, nil // created under another version of the contract: leave it
			}
			now := c.clock.Now()
			w := policy.Callback(op, ct, now)
			if !w.Woken {
				return nil, nil
			}
			if err := c.save(ctx, w.Op, w.Events, now); err != nil {
				return nil, err
			}
			return w.Op, nil
		})
		switch {
		case errors.Is(err, pollwarden.ErrNotFound):
		case err != nil:
			return woken, err
		case op != nil:
			woken++
		}
	}
	return woken, nil
}
