package controller

import (
	"context"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// createUnder stores fresh with its first events and, in the same
// transaction, the contract it is created under, which every later door
// then uses whatever file of that name it loads.
func (c *Controller) createUnder(ctx context.Context, ex *contract.Loaded, fresh *pollwarden.Operation, events []pollwarden.Event) error {
	sc := c.kept.Stored(ex)
	fresh.ContractFingerprint = sc.Fingerprint
	return c.store.OperationCreateUnder(ctx, fresh, events, sc)
}

// keep stores ex's contract (an operation is about to move onto it) and
// returns its fingerprint.
func (c *Controller) keep(ctx context.Context, ex *contract.Loaded) (string, error) {
	sc := c.kept.Stored(ex)
	if err := c.store.ContractPut(ctx, sc); err != nil {
		return "", err
	}
	return sc.Fingerprint, nil
}

// UseContract moves operation id onto current, the contract of its name
// as loaded now, at an approver's word (pollwarden.OptionUseCurrentContract):
// an escalated operation goes back to waiting, due now; a waiting one goes
// on. Its limits are kept, lowered where current's are lower; its counters
// are never reset. It refuses, writing nothing, when current is the
// contract the operation already runs under, or when the actor is no
// approver.
func (c *Controller) UseContract(ctx context.Context, id string, current *contract.Loaded, p policy.DecisionParams) (*pollwarden.Operation, error) {
	fp, err := c.keep(ctx, current)
	if err != nil {
		return nil, err
	}
	return c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		now := c.clock.Now()
		next, events, err := policy.UseContract(op, current.Spec(), p, now)
		if err != nil {
			return nil, err
		}
		next.ContractFingerprint = fp
		if err := c.save(ctx, next, events, now); err != nil {
			return nil, err
		}
		return next, nil
	})
}
