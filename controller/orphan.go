package controller

import (
	"context"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// StepWithoutContract is the step of a waiting operation whose contract
// is no longer loaded: once it is due (or past its deadline) it is
// escalated naming the missing contract (policy.EscalateWithoutContract),
// without a lease and without sending anything, instead of staying
// waiting for ever. op may be a stale copy: the save checks its version,
// and a record moved on meanwhile is looked at again later.
func (c *Controller) StepWithoutContract(ctx context.Context, op *pollwarden.Operation) (StepResult, error) {
	return c.escalateUnpolled(ctx, op, policy.EscalateWithoutContract)
}

// escalateUnpolled escalates op with escalate once it is due (or past its
// deadline), for an operation that cannot be polled, sending nothing.
func (c *Controller) escalateUnpolled(ctx context.Context, op *pollwarden.Operation, escalate func(*pollwarden.Operation, time.Time) []pollwarden.Event) (StepResult, error) {
	now := c.clock.Now()
	if op.Phase != pollwarden.PhaseWaiting {
		return StepResult{Op: op}, nil
	}
	if now.Before(op.NextPollAt) && now.Before(op.DeadlineAt) {
		return StepResult{Op: op, Until: op.NextPollAt}, nil
	}
	next := op.Clone()
	events := escalate(next, now)
	return c.saveUnleased(ctx, policy.GateResult{Verdict: policy.Stop, Op: next, Events: events}, now)
}
