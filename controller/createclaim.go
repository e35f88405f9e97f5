package controller

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// FirstStep is the first step of an operation created together with its
// claim (CreateClaim): the claim is committed, its request not yet sent.
// Run sends it under the claim's lease; a FirstStep never run leaves a
// reservation unused (counted, never an unrecorded request: R11) and a
// lease that expires, after which any scheduler steps the operation.
type FirstStep struct {
	c        *Controller
	ex       *contract.Loaded
	op       *pollwarden.Operation // as created, Version 1
	now      time.Time
	plan     *ClaimPlan
	reserved *pollwarden.Operation
	lease    *pollwarden.Lease
}

// ClaimsAtCreate reports whether a create of fresh under ex may claim
// its first step in the create's own write (CreateClaim): fresh is due at
// once and the gate lets a request go. A contract with provider
// callbacks keeps the create and its first step apart, since its
// callbacks' ledger decides at each step whether the poll is held.
func (c *Controller) ClaimsAtCreate(ex *contract.Loaded, fresh *pollwarden.Operation) bool {
	ct := ex.Spec()
	if ct.Callback != nil || fresh.Phase != pollwarden.PhaseWaiting {
		return false
	}
	return policy.GateUp(fresh, ct, c.clock.Now(), policy.Uptime{}).Verdict == policy.Send
}

// CreateClaim is Create with the claim of the operation's first step
// (ClaimParams: the gate on the created record, the reservation counted
// by policy.CountRequest, the lease, the quota take) in the SAME write:
// once it returns, the record, its first events, the reservation event
// and the lease are durable together, so the request Run then sends was
// counted before it left (R11) against the limits of that very record
// (R10). It fails as Create does (ErrExists, ErrPruned), writing nothing.
func (c *Controller) CreateClaim(ctx context.Context, ex *contract.Loaded, fresh *pollwarden.Operation, events []pollwarden.Event) (*FirstStep, error) {
	ct := ex.Spec()
	sc := c.kept.Stored(ex)
	fresh.ContractFingerprint = sc.Fingerprint
	now := c.clock.Now()
	f := &FirstStep{c: c, ex: ex, now: now, plan: &ClaimPlan{}}
	cp := c.ClaimParams(ct, fresh, now, policy.Uptime{}, f.plan)
	cp.Have = nil
	claimCtx, span := c.startSpan(ctx, "pollwarden.claim", fresh.ID, fresh.Contract, trace.SpanKindInternal)
	reserved, lease, err := c.store.OperationCreateClaim(claimCtx, pollwarden.CreateClaimParams{Op: fresh, Events: events, Contract: sc, Claim: cp})
	endClaim(span, lease != nil, err)
	if err != nil {
		return nil, err
	}
	f.op, f.reserved, f.lease = fresh.Clone(), reserved, lease
	c.changed(fresh, events)
	return f, nil
}

// Run sends the first step's request under its lease and records the
// answer (Claimed, as a step after its claim); a held quota or a claim
// that took nothing is settled as a step would.
func (f *FirstStep) Run(ctx context.Context) (StepResult, error) {
	c := f.c
	return c.observed(func() (StepResult, error) {
		ctx, span := c.startSpan(ctx, "pollwarden.step", f.op.ID, f.op.Contract, trace.SpanKindInternal)
		res, err := c.Claimed(ctx, f.ex, f.op, f.now, f.plan, f.reserved, f.lease, nil)
		endSpan(span, res.Op, err)
		return res, err
	})
}

// Op is the operation as created (Version 1), before its claim.
func (f *FirstStep) Op() *pollwarden.Operation { return f.op.Clone() }
