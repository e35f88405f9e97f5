package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// StepResult says what one step did and when the next is due.
type StepResult struct {
	Op *pollwarden.Operation
	// Sent is true when a status request went out during this step.
	Sent bool
	// Until is when the next step is worth taking; zero when Op is final.
	Until time.Time
}

// Step runs the controller's fixed order once for operation id: load,
// checks, lease, reload and re-check, reserve and persist, one request,
// persist the decision, release (R11, R22). It sends at most one request.
func (c *Controller) Step(ctx context.Context, ex *contract.Extractor, id string) (StepResult, error) {
	if c.observer == nil {
		return c.step(ctx, ex, id)
	}
	start := c.clock.Now()
	res, err := c.step(ctx, ex, id)
	if res.Sent {
		c.observer.StepDone(res.Op.Clone(), c.clock.Now().Sub(start))
	}
	return res, err
}

func (c *Controller) step(ctx context.Context, ex *contract.Extractor, id string) (StepResult, error) {
	ct := ex.Contract()
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return StepResult{}, err
	}
	if op.Contract != ct.Name {
		return StepResult{}, fmt.Errorf("%w: operation %s belongs to contract %q, not %q", pollwarden.ErrInvalid, id, op.Contract, ct.Name)
	}
	now := c.clock.Now()
	if res, settled, err := c.settle(ctx, policy.Gate(op, ct, now), nil, now); settled {
		return res, err
	}
	lease, err := c.store.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: id, Owner: c.owner, Now: now, TTL: leaseTTL(ct)})
	if errors.Is(err, pollwarden.ErrLeaseHeld) {
		if c.observer != nil {
			c.observer.LeaseConflict(id)
		}
		return StepResult{Op: op, Until: now.Add(c.leaseRetry)}, nil
	}
	if err != nil {
		return StepResult{}, err
	}
	defer func() { _ = c.store.LeaseRelease(context.WithoutCancel(ctx), lease) }()
	return c.owned(ctx, ex, lease)
}

// owned is the part of a step done under the lease. The record is reloaded
// first: another owner may have finished the job while we waited (R22).
func (c *Controller) owned(ctx context.Context, ex *contract.Extractor, lease *pollwarden.Lease) (StepResult, error) {
	ct := ex.Contract()
	op, err := c.store.OperationGet(ctx, lease.OperationID)
	if err != nil {
		return StepResult{}, err
	}
	now := c.clock.Now()
	if res, settled, err := c.settle(ctx, policy.Gate(op, ct, now), lease, now); settled {
		return res, err
	}
	reserved, events := policy.Reserve(op, ct, now)
	if err := c.save(ctx, reserved, lease, events, now); err != nil {
		return StepResult{}, err
	}
	now = c.clock.Now()
	if g := policy.StillInTime(reserved, ct, now); g.Verdict != policy.Send {
		return StepResult{Op: g.Op}, c.save(ctx, g.Op, lease, g.Events, now)
	}
	url, err := statusURL(ct, reserved)
	if err != nil {
		return c.failUnsent(ctx, reserved, ct, lease, err.Error())
	}
	// The request, once reserved, is finished even if the caller is
	// interrupted, so its answer is persisted rather than lost.
	resp := c.prober.Status(context.WithoutCancel(ctx), ct, url)
	switch {
	case resp.CredentialError != nil:
		return c.failUnsent(ctx, reserved, ct, lease, resp.CredentialError.Error())
	case !resp.Sent:
		return c.failUnsent(ctx, reserved, ct, lease, resp.TransportDetail)
	}
	obs := observe(ex, resp)
	now = c.clock.Now()
	st := policy.Decide(reserved, ct, obs, now, c.rand)
	if err := c.save(ctx, st.Op, lease, st.Events, now); err != nil {
		return StepResult{}, err
	}
	res := StepResult{Op: st.Op, Sent: true}
	if !st.Op.Phase.Terminal() {
		res.Until = st.Op.NextPollAt
	}
	return res, nil
}

// failUnsent escalates when a reserved request could not be sent at all
// (no credential, unusable URL): the reservation stays counted (R11).
func (c *Controller) failUnsent(ctx context.Context, op *pollwarden.Operation, ct *pollwarden.Contract, lease *pollwarden.Lease, why string) (StepResult, error) {
	now := c.clock.Now()
	next := op.Clone()
	events := policy.Escalate(next, ct, pollwarden.ReasonIntegrationFailure, why+"; nothing was sent", now)
	return StepResult{Op: next}, c.save(ctx, next, lease, events, now)
}

// settle handles every gate verdict but Send, before the lease (lease nil)
// and after it; settled is false when one request may go.
func (c *Controller) settle(ctx context.Context, g policy.GateResult, lease *pollwarden.Lease, now time.Time) (res StepResult, settled bool, err error) {
	switch g.Verdict {
	case policy.Done:
		return StepResult{Op: g.Op}, true, nil
	case policy.Wait:
		if !g.Spread {
			return StepResult{Op: g.Op, Until: g.Until}, true, nil
		}
		// A late wake-up was spread (R9): the new time is saved before
		// sleeping, like any schedule.
		if lease == nil {
			res, err = c.saveUnleased(ctx, g, now)
			if err == nil && res.Until.IsZero() {
				res.Until = g.Until
			}
			return res, true, err
		}
		return StepResult{Op: g.Op, Until: g.Until}, true, c.save(ctx, g.Op, lease, g.Events, now)
	case policy.Stop:
		if lease == nil {
			res, err = c.saveUnleased(ctx, g, now)
			return res, true, err
		}
		return StepResult{Op: g.Op}, true, c.save(ctx, g.Op, lease, g.Events, now)
	}
	return StepResult{}, false, nil
}

func (c *Controller) saveUnleased(ctx context.Context, g policy.GateResult, now time.Time) (StepResult, error) {
	err := c.save(ctx, g.Op, nil, g.Events, now)
	if errors.Is(err, pollwarden.ErrConflict) || errors.Is(err, pollwarden.ErrLeaseHeld) {
		// Someone else changed the record or is mid-request: look again soon.
		return StepResult{Op: g.Op, Until: now.Add(c.leaseRetry)}, nil
	}
	return StepResult{Op: g.Op}, err
}

func (c *Controller) save(ctx context.Context, op *pollwarden.Operation, lease *pollwarden.Lease, events []pollwarden.Event, now time.Time) error {
	err := c.store.OperationSave(context.WithoutCancel(ctx), pollwarden.SaveParams{Op: op, Lease: lease, Events: events, Now: now})
	if err == nil {
		c.changed(op, events)
	}
	return err
}

// leaseTTL covers one request and its persistence, no more: the lease is
// never held while sleeping, and a dead owner's lease frees itself soon.
func leaseTTL(ct *pollwarden.Contract) time.Duration {
	return 2*ct.Status.Timeout + 5*time.Second
}

func statusURL(ct *pollwarden.Contract, op *pollwarden.Operation) (string, error) {
	if op.StatusURL != "" {
		return op.StatusURL, contract.CheckHost(ct, op.StatusURL)
	}
	return contract.StatusURL(ct, op.ProviderJobID)
}

// observe reduces a response to the facts the core reads.
func observe(ex *contract.Extractor, r prober.Response) *pollwarden.Observation {
	obs := &pollwarden.Observation{
		SentAt: r.SentAt, ReceivedAt: r.ReceivedAt, Status: r.Status,
		Transport: r.Transport, TransportDetail: r.TransportDetail,
		RetryAfter: r.RetryAfter, RequestID: r.RequestID,
	}
	switch {
	case r.Transport != "":
	case r.BodyTooLarge:
		obs.Body.Problem = fmt.Sprintf("body larger than max_body_bytes (%d)", ex.Contract().Status.MaxBodyBytes)
	case r.Status >= 200 && r.Status < 300:
		obs.Body = ex.Extract(r.Body)
	}
	return obs
}
