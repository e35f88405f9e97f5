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

// cancelJob asks the provider to cancel operation id's job as its own
// recorded action (R23): the approver's decision, the phase cancelling and
// the cancel record are written together with this process's lease, in
// one write, before the request leaves; the request is sent once, and its
// answer is recorded with the lease's release. The operation then keeps
// observing until the provider reports an end state. A waiting operation
// may be cancelled at any time, an escalated one when its escalation
// offers it. When a cancel may already have reached the provider, nothing
// is sent (unless the contract documents cancel as idempotent) and the
// record is returned as it is.
func (c *Controller) cancelJob(ctx context.Context, ex *contract.Loaded, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	ct := ex.Spec()
	p.Option = pollwarden.OptionCancel
	var lease *pollwarden.Lease
	op, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		now := c.clock.Now()
		var refusal error
		var events []pollwarden.Event
		var held *quotaHeld
		saved, l, err := c.store.OperationClaim(ctx, pollwarden.ClaimParams{
			OperationID: id, Owner: c.owner, Now: now, TTL: c.leaseTTL(ct),
			Change: func(fresh *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
				events = nil
				if refusal = policy.CheckContract(fresh, ct); refusal != nil {
					return nil, nil
				}
				var next *pollwarden.Operation
				next, events, refusal = policy.RequestCancel(fresh, ct, p, now, now.Add(c.leaseTTL(ct)))
				return next, events
			},
			// The cancel carries the credential: it takes from the key's
			// quota; held, nothing is recorded and the decision waits for
			// the slot (or is refused, ErrQuotaHeld, when it is far).
			Quota: quotaTake(ct, now, false, &held),
		})
		switch {
		case err != nil:
			return nil, err
		case refusal != nil:
			return nil, refusal
		case held != nil:
			if err := c.waitQuota(ctx, held, "the cancel", pollwarden.QuotaKey(ct)); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: a slot of the shared quota is free now", pollwarden.ErrConflict)
		case l != nil:
			c.changed(saved, events)
			lease = l
		}
		return saved, nil
	})
	if err != nil || lease == nil {
		return op, err
	}
	return c.sendCancel(ctx, ex, op, lease)
}

// sendCancel sends the cancel request recorded on op, whose lease this
// process holds, and records the answer with the lease's release. The
// call is finished even if the caller goes away, so its answer is not
// lost. If the call outlived the lease, the answer is recorded on the
// record as it now is.
func (c *Controller) sendCancel(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, lease *pollwarden.Lease) (*pollwarden.Operation, error) {
	ct := ex.Spec()
	released := false
	defer func() {
		if !released {
			_ = c.store.LeaseRelease(context.WithoutCancel(ctx), lease)
		}
	}()
	attempt := op.Cancel.Attempts
	answer := c.callCancel(ctx, ex, op)
	now := c.clock.Now()
	next, events := policy.CancelAnswered(op, ct, attempt, answer, now)
	err := c.saveRelease(ctx, next, lease, events, now)
	released = err == nil || errors.Is(err, pollwarden.ErrLeaseLost)
	if !errors.Is(err, pollwarden.ErrLeaseLost) {
		return next, err
	}
	bg := context.WithoutCancel(ctx)
	return c.retryBusy(bg, func() (*pollwarden.Operation, error) {
		cur, err := c.store.OperationGet(bg, op.ID)
		if err != nil {
			return nil, err
		}
		now := c.clock.Now()
		next, events := policy.CancelAnswered(cur, ct, attempt, answer, now)
		return next, c.save(bg, next, events, now)
	})
}

// callCancel sends the contract's cancel request for op and reduces the
// answer to what the record keeps.
func (c *Controller) callCancel(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) policy.CancelAnswer {
	ct := ex.Spec()
	url, err := contract.CancelURLFor(ct, op.ProviderJobID, op.Vars)
	if err != nil {
		return policy.CancelAnswer{Detail: err.Error()}
	}
	body, err := contract.CancelBody(ct, op.ProviderJobID, op.Vars)
	if err != nil {
		return policy.CancelAnswer{Detail: err.Error()}
	}
	headers, err := contract.RequestHeaders(ct, op.ProviderJobID, op.Vars)
	if err != nil {
		return policy.CancelAnswer{Detail: err.Error()}
	}
	r := c.prober.Action(context.WithoutCancel(ctx), ct, ct.Cancel, url, body, headers)
	switch {
	case r.CredentialError != nil:
		return policy.CancelAnswer{Detail: r.CredentialError.Error()}
	case !r.Sent:
		return policy.CancelAnswer{Detail: r.TransportDetail}
	case r.Transport != "":
		return policy.CancelAnswer{Sent: true, Transport: r.Transport,
			Detail: fmt.Sprintf("%s %s: %s: %s", ct.Cancel.Method, url, r.Transport, r.TransportDetail)}
	}
	a := policy.CancelAnswer{Sent: true, Status: r.Status, Detail: fmt.Sprintf("%s %s answered %d", ct.Cancel.Method, url, r.Status)}
	if r.Status >= 200 && r.Status < 300 {
		if b := r.Facts(ex); b.Problem == "" && b.HasState {
			a.State = b.State
		}
	}
	return a
}

// interruptedCancel is a step's first look at an operation whose cancel
// is still recorded but unanswered once the operation is due again (by
// then the sender's lease has expired: it ended during the call, or the
// call outlived the lease). The cancel is marked interrupted and the step
// goes on observing; where the contract documents cancel as idempotent it
// is sent again instead. handled is false when op has no such cancel.
func (c *Controller) interruptedCancel(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, now time.Time, up policy.Uptime) (res StepResult, handled bool, err error) {
	ct := ex.Spec()
	next, events, resend, ok := policy.InterruptedCancel(op, ct, now)
	if !ok {
		return StepResult{}, false, nil
	}
	retry := StepResult{Op: op, Until: now.Add(c.leaseRetry)}
	if !resend {
		err := c.save(ctx, next, events, now)
		if errors.Is(err, pollwarden.ErrConflict) || errors.Is(err, pollwarden.ErrLeaseHeld) {
			return retry, true, nil
		}
		if err != nil {
			return StepResult{}, true, err
		}
		res, err := c.step(ctx, ex, next, up)
		return res, true, err
	}
	var held *quotaHeld
	saved, lease, err := c.store.OperationClaim(ctx, pollwarden.ClaimParams{
		OperationID: op.ID, Owner: c.owner, Now: now, TTL: c.leaseTTL(ct), Have: op,
		Change: func(fresh *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
			n, evs, again, ok := policy.InterruptedCancel(fresh, ct, now)
			if !ok || !again {
				return nil, nil
			}
			events = evs
			return n, evs
		},
		Quota: quotaTake(ct, now, false, &held),
	})
	switch {
	case errors.Is(err, pollwarden.ErrLeaseHeld):
		return retry, true, nil
	case err != nil:
		return StepResult{}, true, err
	case held != nil:
		// The cancel is sent again once the key frees a slot.
		return StepResult{Op: op, Until: held.grant.Until}, true, nil
	case lease == nil:
		return retry, true, nil
	}
	c.changed(saved, events)
	done, err := c.sendCancel(ctx, ex, saved, lease)
	if err != nil {
		return StepResult{}, true, err
	}
	res = StepResult{Op: done}
	if done.Phase.Polling() {
		res.Until = done.NextPollAt
	}
	return res, true, nil
}
