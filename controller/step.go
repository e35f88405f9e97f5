package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

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
// checks, then lease, reload, re-check and reservation in one write
// (Store.OperationClaim), one request, and the decision saved together
// with the lease's release (R11, R22). It sends at most one request.
func (c *Controller) Step(ctx context.Context, ex *contract.Loaded, id string) (StepResult, error) {
	return c.observed(func() (StepResult, error) {
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return StepResult{}, err
		}
		return c.step(ctx, ex, op, policy.Uptime{})
	})
}

// StepFrom is Step starting from a copy of the record the caller already
// read (a scheduler's list of due work), which saves a read per step. The
// copy only decides whether to try: the claim reloads the record under the
// lease and re-checks everything, so a stale copy can cost a wasted claim
// or a retry later, never a request the stored record does not allow.
func (c *Controller) StepFrom(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (StepResult, error) {
	return c.StepFromUp(ctx, ex, op, policy.Uptime{})
}

// StepFromUp is StepFrom with the caller's Uptime (policy.GateUp): a
// scheduler passes when it started or last resumed from a stall, so a
// step late only because the scheduler is busy sends at once instead of
// being spread like a wake-up missed while no process was running (R9).
func (c *Controller) StepFromUp(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, up policy.Uptime) (StepResult, error) {
	return c.observed(func() (StepResult, error) { return c.step(ctx, ex, op.Clone(), up) })
}

func (c *Controller) observed(step func() (StepResult, error)) (StepResult, error) {
	if c.observer == nil {
		return step()
	}
	start := c.clock.Now()
	res, err := step()
	if res.Sent {
		c.observer.StepDone(res.Op.Clone(), c.clock.Now().Sub(start))
	}
	return res, err
}

// step is one traced step: its span holds the claim, request and record
// spans, and ends with where the operation stands.
func (c *Controller) step(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, up policy.Uptime) (StepResult, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.step", op.ID, op.Contract, trace.SpanKindInternal)
	res, err := c.stepOnce(ctx, ex, op, up)
	endSpan(span, res.Op, err)
	return res, err
}

func (c *Controller) stepOnce(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, up policy.Uptime) (StepResult, error) {
	ct := ex.Spec()
	if op.Contract != ct.Name {
		return StepResult{}, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s belongs to contract %q, not %q", op.ID, op.Contract, ct.Name)
	}
	now := c.clock.Now()
	// A cancel left unanswered by a process that ended is said first, so
	// the record tells it even when the gate then stops the operation (a
	// spent budget, a passed deadline).
	if res, handled, err := c.interruptedCancel(ctx, ex, op, now, up); handled {
		return res, err
	}
	if g, held := c.heldForCallbacks(ct, op, now); held {
		res, _, err := c.settle(ctx, g, now)
		return res, err
	}
	if res, settled, err := c.settle(ctx, policy.GateUp(op, ct, now, up), now); settled {
		return res, err
	}
	// The claim runs the same checks on the record as reloaded under the
	// lease (R22) and, when one request may go, reserves it (R11), in one
	// transaction.
	var plan ClaimPlan
	claimCtx, claimSpan := c.startSpan(ctx, "pollwarden.claim", op.ID, op.Contract, trace.SpanKindInternal)
	reserved, lease, err := c.store.OperationClaim(claimCtx, c.ClaimParams(ct, op, now, up, &plan))
	endClaim(claimSpan, lease != nil, err)
	return c.Claimed(ctx, ex, op, now, &plan, reserved, lease, err)
}

// ClaimPlan is what a step's claim decided, filled in by the Change and
// Quota functions of the ClaimParams that made it and read by Claimed.
// A store that claims several operations in one write (a take of due
// work, a create with its first claim) runs the same functions, so each
// operation's claim is decided by the same rules wherever it is written.
type ClaimPlan struct {
	// gate keeps what the checks said when they refused.
	gate        policy.GateResult
	reservation []pollwarden.Event
	held        *quotaHeld
	// watch: the key has failures or an incident, every answer counts.
	watch bool
}

// ClaimParams is the claim of one step of op under ct at now: the same
// checks on the record as reloaded under the lease (R22) and, when one
// request may go, its reservation (R11), with the request taken from its
// key's shared quota in the same write. What the functions decide is
// kept in plan.
func (c *Controller) ClaimParams(ct *pollwarden.ContractSpec, op *pollwarden.Operation, now time.Time, up policy.Uptime, plan *ClaimPlan) pollwarden.ClaimParams {
	return pollwarden.ClaimParams{
		OperationID: op.ID, Owner: c.owner, Now: now, TTL: c.leaseTTL(ct), Have: op,
		Change: func(fresh *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
			plan.reservation = nil
			if plan.gate = policy.GateUp(fresh, ct, now, up); plan.gate.Verdict != policy.Send {
				return nil, nil
			}
			var next *pollwarden.Operation
			next, plan.reservation = policy.CountRequest(fresh, ct, now)
			return next, plan.reservation
		},
		// The request is taken from its key's shared quota in the same
		// write; a held one records its wait instead (shared_quota).
		Quota: watchIncidents(quotaTake(ct, now, true, &plan.held), &plan.watch),
	}
}

// Claimed goes on from a claim made with ClaimParams(ct, op, now, ...,
// plan) and its result (reserved, lease, err): a held lease or a held
// quota waits, a refusal is settled without a lease, and a reservation is
// sent, answered and recorded under the lease, which the last write
// frees.
func (c *Controller) Claimed(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, now time.Time, plan *ClaimPlan,
	reserved *pollwarden.Operation, lease *pollwarden.Lease, err error) (StepResult, error) {
	if errors.Is(err, pollwarden.ErrLeaseHeld) {
		if c.observer != nil {
			c.observer.LeaseConflict(op.ID)
		}
		return StepResult{Op: op, Until: now.Add(c.leaseRetry)}, nil
	}
	if err != nil {
		return StepResult{}, err
	}
	if lease == nil && plan.held != nil && reserved != nil {
		// The key held the request: its wait is recorded, nothing sent.
		c.changed(reserved, plan.held.events)
		return StepResult{Op: reserved, Until: reserved.NextPollAt}, nil
	}
	if lease == nil {
		// The reloaded record allows no request (another owner moved it
		// on): handle it like the first check, without a lease.
		res, _, err := c.settle(ctx, plan.gate, now)
		return res, err
	}
	c.changed(reserved, plan.reservation)
	released := false
	defer func() {
		// Every path below ends with a save that releases the lease; if
		// that save failed, or something panicked, free it here rather
		// than leave the operation locked until the lease expires.
		if !released {
			_ = c.store.LeaseRelease(context.WithoutCancel(ctx), lease)
		}
	}()
	return c.owned(ctx, ex, reserved, lease, &released, plan.watch)
}

// owned is the part of a step done under the lease, from the reserved
// record to the decision. Its last write releases the lease (*released is
// set once it did, or once the lease is known lost).
func (c *Controller) owned(ctx context.Context, ex *contract.Loaded, reserved *pollwarden.Operation, lease *pollwarden.Lease, released *bool, watch bool) (StepResult, error) {
	ct := ex.Spec()
	// note, once the answer is in, is what it teaches the key: saved
	// with the answer's record.
	var note *pollwarden.QuotaNote
	finish := func(op *pollwarden.Operation, events []pollwarden.Event, now time.Time) error {
		rctx, span := c.startSpan(ctx, "pollwarden.record", op.ID, op.Contract, trace.SpanKindInternal)
		err := c.write(rctx, pollwarden.SaveParams{Op: op, Lease: lease, Events: events, Now: now, Release: true, Quota: note})
		endSpan(span, op, err)
		*released = err == nil || errors.Is(err, pollwarden.ErrLeaseLost)
		return err
	}
	now := c.clock.Now()
	if g := policy.StillInTime(reserved, ct, now); g.Verdict != policy.Send {
		return StepResult{Op: g.Op}, finish(g.Op, g.Events, now)
	}
	url, err := statusURL(ct, reserved)
	if err != nil {
		return c.failUnsent(reserved, ct, err.Error(), finish)
	}
	// The request, once reserved, is finished even if the caller is
	// interrupted, so its answer is persisted rather than lost.
	body, err := contract.StatusBody(ct, reserved.ProviderJobID, reserved.Vars)
	if err != nil {
		return c.failUnsent(reserved, ct, err.Error(), finish)
	}
	headers, err := contract.RequestHeaders(ct, reserved.ProviderJobID, reserved.Vars)
	if err != nil {
		return c.failUnsent(reserved, ct, err.Error(), finish)
	}
	var resp prober.Response
	if ct.Status.Conditional == "etag" {
		ctx = prober.WithIfNoneMatch(ctx, reserved.LastETag)
	}
	// The request's span is the client side of the call: its context is
	// the traceparent a contract with status.propagate_trace sends.
	reqCtx, reqSpan := c.startSpan(ctx, "pollwarden.request", reserved.ID, reserved.Contract, trace.SpanKindClient)
	resp = c.prober.StatusFor(context.WithoutCancel(reqCtx), ct, url, body, headers)
	endRequest(reqSpan, reserved.StatusRequestsUsed, resp)
	switch {
	case resp.CredentialError != nil:
		return c.failUnsent(reserved, ct, resp.CredentialError.Error(), finish)
	case !resp.Sent:
		return c.failUnsent(reserved, ct, resp.TransportDetail, finish)
	}
	obs := observe(ex, resp)
	now = c.clock.Now()
	if resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden {
		// Read again at once, so the fingerprint is of the credential
		// just refused (retry_credential is offered once it differs).
		obs.RefusedCredential = c.prober.Refused(ct, now)
		obs.DeniedBody = resp.DeniedBody()
	}
	st := c.decided(ct, reserved, policy.Decide(reserved, ct, obs, now, c.rand), now)
	note = quotaNote(ct, reserved, obs)
	if note == nil && watch {
		note = incidentNote(ct, reserved, obs)
	}
	if err := finish(st.Op, append(st.Events, quotaRejections(st.Op, ct, obs, now)...), now); err != nil {
		return StepResult{}, err
	}
	res := StepResult{Op: st.Op, Sent: true}
	if st.Op.Phase.Polling() {
		res.Until = st.Op.NextPollAt
	}
	return res, nil
}

// failUnsent escalates when a reserved request could not be sent at all
// (no credential, unusable URL): the reservation stays counted (R11).
func (c *Controller) failUnsent(op *pollwarden.Operation, ct *pollwarden.ContractSpec, why string,
	finish func(*pollwarden.Operation, []pollwarden.Event, time.Time) error) (StepResult, error) {
	now := c.clock.Now()
	next := op.Clone()
	events := policy.Escalate(next, ct, pollwarden.ReasonIntegrationFailure, why+"; nothing was sent", now)
	return StepResult{Op: next}, finish(next, events, now)
}

// settle handles every gate verdict but Send, without a lease (before the
// claim, or after a claim that found nothing to reserve); settled is false
// when one request may go.
func (c *Controller) settle(ctx context.Context, g policy.GateResult, now time.Time) (res StepResult, settled bool, err error) {
	switch g.Verdict {
	case policy.Done:
		return StepResult{Op: g.Op}, true, nil
	case policy.Wait:
		if !g.Spread {
			return StepResult{Op: g.Op, Until: g.Until}, true, nil
		}
		// A late wake-up was spread (R9): the new time is saved before
		// sleeping, like any schedule, without a lease (no request goes).
		res, err = c.saveUnleased(ctx, g, now)
		if err == nil && res.Until.IsZero() {
			res.Until = g.Until
		}
		return res, true, err
	case policy.Stop:
		res, err = c.saveUnleased(ctx, g, now)
		return res, true, err
	}
	return StepResult{}, false, nil
}

func (c *Controller) saveUnleased(ctx context.Context, g policy.GateResult, now time.Time) (StepResult, error) {
	err := c.save(ctx, g.Op, g.Events, now)
	if errors.Is(err, pollwarden.ErrConflict) || errors.Is(err, pollwarden.ErrLeaseHeld) {
		// Someone else changed the record or is mid-request: look again soon.
		return StepResult{Op: g.Op, Until: now.Add(c.leaseRetry)}, nil
	}
	return StepResult{Op: g.Op}, err
}

// save writes a change made without a lease (a decision, a cancel, a
// gate's answer): the store refuses it with ErrLeaseHeld while a step
// holds the lease, so it never lands in the middle of a request. A step's
// own writes go through saveRelease.
func (c *Controller) save(ctx context.Context, op *pollwarden.Operation, events []pollwarden.Event, now time.Time) error {
	return c.write(ctx, pollwarden.SaveParams{Op: op, Events: events, Now: now})
}

// saveRelease saves a step's last change and frees its lease in the same
// write.
func (c *Controller) saveRelease(ctx context.Context, op *pollwarden.Operation, lease *pollwarden.Lease, events []pollwarden.Event, now time.Time) error {
	return c.write(ctx, pollwarden.SaveParams{Op: op, Lease: lease, Events: events, Now: now, Release: true})
}

func (c *Controller) write(ctx context.Context, p pollwarden.SaveParams) error {
	err := c.store.OperationSave(context.WithoutCancel(ctx), p)
	if err == nil {
		c.changed(p.Op, p.Events)
	}
	return err
}

// DefaultLeaseSlack is Options.LeaseSlack's default.
const DefaultLeaseSlack = 5 * time.Second

// leaseTTL covers one request and its persistence, no more: the lease is
// never held while sleeping, and a dead owner's lease frees itself soon.
func (c *Controller) leaseTTL(ct *pollwarden.ContractSpec) time.Duration {
	return 2*ct.Status.Timeout + c.leaseSlack
}

func statusURL(ct *pollwarden.ContractSpec, op *pollwarden.Operation) (string, error) {
	if op.StatusURL != "" {
		return op.StatusURL, contract.CheckOrigin(ct, op.StatusURL)
	}
	return contract.StatusURLFor(ct, op.ProviderJobID, op.Vars)
}

// observe reduces a response to the facts the core reads.
func observe(ex *contract.Loaded, r prober.Response) *pollwarden.Observation {
	obs := &pollwarden.Observation{
		SentAt: r.SentAt, ReceivedAt: r.ReceivedAt, Status: r.Status,
		Transport: r.Transport, TransportDetail: r.TransportDetail,
		RetryAfter: r.RetryAfter, RequestID: r.RequestID, ETag: r.ETag,
	}
	ct := ex.Spec()
	if r.Transport == "" && !r.BodyTooLarge {
		at := r.ReceivedAt
		if at.IsZero() {
			at = r.SentAt
		}
		obs.Quota = contract.QuotaFacts(ct, r.Headers, at)
		why, wait := r.RateLimit(ex, at)
		obs.RateLimitSignal = why
		if (why != "" || r.Status == http.StatusTooManyRequests) && obs.RetryAfter == "" {
			obs.RetryAfter = wait
		}
	}
	_, mapped := ct.State.StatusCodes[r.Status]
	switch {
	case r.Transport != "":
	case r.BodyTooLarge:
		obs.Body.Problem = fmt.Sprintf("body larger than max_body_bytes (%d)", ex.Spec().Status.MaxBodyBytes)
	case mapped || r.Status >= 200 && r.Status < 300:
		obs.Body = r.Facts(ex)
	}
	return obs
}
