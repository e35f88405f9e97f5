package controller

import (
	"context"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// AdoptContract records that operation id goes on under ct, an edited
// contract of the same name whose change only lowers limits
// (policy.CompareContract): its limits lowered, its counters kept, and a
// contract_changed event in its story. It refuses, writing nothing, a
// change that is not adoptable, and answers ErrLeaseHeld while another
// process is mid-request on the operation.
func (c *Controller) AdoptContract(ctx context.Context, id string, ct *pollwarden.ContractSpec, by string) (*pollwarden.Operation, error) {
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return nil, err
	}
	ch := policy.CompareContract(op, ct)
	if !ch.Changed() {
		return op, nil
	}
	if !ch.Adoptable {
		return nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "contract %s changed in a way that could widen the operation: %s", ct.Name, strings.Join(ch.Changes, ", "))
	}
	sc := contract.Stored(ct)
	if err := c.store.ContractPut(ctx, sc); err != nil {
		return nil, err
	}
	now := c.clock.Now()
	next, ev := policy.AdoptContract(op, ct, ch, now, by)
	next.ContractFingerprint = sc.Fingerprint
	if err := c.save(ctx, next, []pollwarden.Event{ev}, now); err != nil {
		return nil, err
	}
	c.changed(next, []pollwarden.Event{ev})
	return next, nil
}

// StepChangedContract is the daemon's step of a waiting operation whose
// contract, as loaded now, differs from the one it was created under in
// a way that could widen it (ch, not adoptable): once due it is escalated
// saying what changed (policy.EscalateChangedContract), without a lease
// and without sending anything, rather than polled under a file it was
// not created under. op may be a stale copy, as for StepWithoutContract.
func (c *Controller) StepChangedContract(ctx context.Context, op *pollwarden.Operation, ch policy.ContractChange) (StepResult, error) {
	return c.escalateUnpolled(ctx, op, func(next *pollwarden.Operation, now time.Time) []pollwarden.Event {
		return policy.EscalateChangedContract(next, ch, now)
	})
}
