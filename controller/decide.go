package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// Decide applies a person's decision to an escalated operation (R20). The
// cancel option runs the contract's cancel call as its own recorded action
// (R23) after the decision itself is saved.
func (c *Controller) Decide(ctx context.Context, ex *contract.Extractor, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	next, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) { return c.decideOnce(ctx, ex, id, p) })
	if err != nil || p.Option != pollwarden.OptionCancel {
		return next, err
	}
	return c.cancel(ctx, ex, next)
}

// decideOnce reads the record, applies the decision and saves it.
func (c *Controller) decideOnce(ctx context.Context, ex *contract.Extractor, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	ct := ex.Contract()
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if op.Contract != ct.Name {
		return nil, fmt.Errorf("%w: operation %s belongs to contract %q, not %q", pollwarden.ErrInvalid, id, op.Contract, ct.Name)
	}
	now := c.clock.Now()
	next, events, err := policy.Apply(op, ct, p, now)
	if err != nil {
		return nil, err
	}
	if err := c.save(ctx, next, nil, events, now); err != nil {
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

func (c *Controller) cancel(ctx context.Context, ex *contract.Extractor, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	ct := ex.Contract()
	url, err := contract.CancelURLFor(ct, op.ProviderJobID, op.Vars)
	ok, detail := false, ""
	if err != nil {
		detail = err.Error()
	} else {
		r := c.prober.Action(context.WithoutCancel(ctx), ct, ct.Cancel, url)
		switch {
		case r.CredentialError != nil:
			detail = r.CredentialError.Error()
		case r.Transport != "":
			detail = fmt.Sprintf("%s: %s", r.Transport, r.TransportDetail)
		default:
			ok = r.Status >= 200 && r.Status < 300
			detail = fmt.Sprintf("%s %s answered %d", ct.Cancel.Method, url, r.Status)
		}
	}
	now := c.clock.Now()
	next, events := policy.Cancelled(op, ok, detail, now)
	if err := c.save(ctx, next, nil, events, now); err != nil {
		return nil, err
	}
	return next, nil
}

// RequestExtension records an agent's request; it grants nothing.
func (c *Controller) RequestExtension(ctx context.Context, id string, actor pollwarden.Actor, p ExtensionRequest) (*pollwarden.Operation, error) {
	return c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		now := c.clock.Now()
		events := policy.RequestExtension(op, actor, p.ExtraTime, p.ExtraStatusRequests, p.Justification, now)
		if err := c.save(ctx, op, nil, events, now); err != nil {
			return nil, err
		}
		return op, nil
	})
}

// ExtensionRequest is what an agent asks for; see RequestExtension.
type ExtensionRequest struct {
	ExtraTime           time.Duration
	ExtraStatusRequests int
	Justification       string
}
