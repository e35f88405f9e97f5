package controller

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// Decide applies a person's decision to an operation (R20), with the
// contract it was created under (a contract file of the same name that
// differs is refused, naming what differs). cancel_at_provider is Cancel.
func (c *Controller) Decide(ctx context.Context, ex *contract.Loaded, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.decision", id, ex.Spec().Name, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attrOption.String(p.Option), attrActorRole.String(string(p.Actor.Role)))
	}
	op, err := c.decide(ctx, ex, id, p)
	endSpan(span, op, err)
	return op, err
}

func (c *Controller) decide(ctx context.Context, ex *contract.Loaded, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	if p.Option == pollwarden.OptionCancel {
		return c.Cancel(ctx, ex, id, p)
	}
	op, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) { return c.decideOnce(ctx, ex, id, p) })
	if err == nil && p.Option == pollwarden.OptionResubmit && op.Phase.Submitting() {
		// The approver's resubmission is sent now, under the lease, as
		// any submission is.
		return c.driveSubmission(ctx, ex, op)
	}
	return op, err
}

// decideOnce reads the record, applies the decision and saves it.
func (c *Controller) decideOnce(ctx context.Context, ex *contract.Loaded, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	ct := ex.Spec()
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := policy.CheckContract(op, ct); err != nil {
		return nil, err
	}
	now := c.clock.Now()
	next, events, err := policy.Apply(op, ct, p, now)
	if err != nil {
		return nil, err
	}
	if err := c.save(ctx, next, events, now); err != nil {
		return nil, err
	}
	return next, nil
}

// busyAttempts bounds retryBusy: a step holds the lease for one request
// and its persistence, so a few seconds always outlast it.
const busyAttempts = 25

// retryBusy re-runs f, which must re-read the record each time, while a
// step holds the lease or changed the record under it: a decision that
// arrives the moment an escalation is saved, before that step has
// released its lease, must not fail for it.
func (c *Controller) retryBusy(ctx context.Context, f func() (*pollwarden.Operation, error)) (*pollwarden.Operation, error) {
	for attempt := 1; ; attempt++ {
		op, err := f()
		busy := errors.Is(err, pollwarden.ErrLeaseHeld) || errors.Is(err, pollwarden.ErrConflict)
		if !busy || attempt == busyAttempts {
			return op, err
		}
		if err := c.clock.Sleep(ctx, c.leaseRetry); err != nil {
			return nil, err
		}
	}
}

// requestExtension records an agent's request; it grants nothing. The
// request is checked here for every door and embedder
// (pollwarden.ExtensionRequest.Check); one on a
// finished operation is refused with pollwarden.ErrPhase, and nothing is
// written to its audit.
func (c *Controller) requestExtension(ctx context.Context, id string, actor pollwarden.Actor, p pollwarden.ExtensionRequest) (*pollwarden.Operation, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		if op.Phase.Finished() {
			return nil, pollwarden.Refuse(pollwarden.ErrPhase, "", "operation %s is %s; there is nothing to extend", op.ID, op.Phase)
		}
		// An escalation awaiting a decision is offered the request at
		// once, under the contract the operation runs under.
		var ct *pollwarden.ContractSpec
		if op.Phase == pollwarden.PhaseEscalated {
			ex, ok, err := c.kept.Of(ctx, op)
			if err != nil {
				return nil, err
			}
			if ok {
				ct = ex.Spec()
			}
		}
		now := c.clock.Now()
		events := policy.RequestExtension(op, ct, actor, p.ExtraTime, p.ExtraStatusRequests, p.Justification, now)
		if err := c.save(ctx, op, events, now); err != nil {
			return nil, err
		}
		return op, nil
	})
}
