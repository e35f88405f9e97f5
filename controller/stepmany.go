package controller

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// StepStart is one step of StepsFrom: what StepFromUp takes.
type StepStart struct {
	// Ctx is the step's own context: its request goes out under it (a
	// scheduler's carries the contract's ceiling for the transport).
	Ctx context.Context
	Ex  *contract.Loaded
	Op  *pollwarden.Operation
	Up  policy.Uptime
}

// StepsFrom begins the steps of starts and returns the rest of each, at
// its index, to be called once, each in its own goroutine. A scheduler
// starting several steps at once claims them together this way: where the
// store is a pollwarden.ManyClaimer, the claims of every step whose first
// checks pass are made in one store call (one write transaction for the
// lot, instead of one each), each with the ClaimParams a single step
// would use, and each rest is that step's Claimed (request, decision,
// the save that frees the lease). A step that would not claim at once
// (its checks wait or stop it, a cancel is pending, callbacks hold it)
// and every step of another store get the whole StepFromUp as their rest,
// so no rule is decided here that a single step decides otherwise. Every
// rest must be called: a claimed step's lease is freed by it.
func (c *Controller) StepsFrom(ctx context.Context, starts []StepStart) []func() (StepResult, error) {
	rest := make([]func() (StepResult, error), len(starts))
	mc, many := c.store.(pollwarden.ManyClaimer)
	var claims []pollwarden.ClaimParams
	var begun []*begunStep
	for i, st := range starts {
		if many {
			if b := c.begin(st); b != nil {
				b.i = i
				begun = append(begun, b)
				claims = append(claims, b.params)
				continue
			}
		}
		rest[i] = func() (StepResult, error) { return c.StepFromUp(st.Ctx, st.Ex, st.Op, st.Up) }
	}
	if len(claims) == 0 {
		return rest
	}
	results := mc.OperationClaimMany(ctx, claims)
	for k, b := range begun {
		r := results[k]
		rest[b.i] = func() (StepResult, error) { return b.finish(c, r) }
	}
	return rest
}

// begunStep is a step of StepsFrom whose claim is made with the others':
// its spans are open and its plan is filled in by the claim.
type begunStep struct {
	i               int
	ctx             context.Context
	ex              *contract.Loaded
	op              *pollwarden.Operation
	now, start      time.Time
	plan            ClaimPlan
	params          pollwarden.ClaimParams
	span, claimSpan trace.Span
}

// begin is stepOnce up to its claim for a step that claims at once, or
// nil for one that stepOnce would settle, or hand elsewhere, first
// (those are stepped whole). It only decides: nothing is written.
func (c *Controller) begin(st StepStart) *begunStep {
	ct := st.Ex.Spec()
	op := st.Op.Clone()
	now := c.clock.Now()
	if op.Contract != ct.Name {
		return nil
	}
	if _, _, _, cancel := policy.InterruptedCancel(op, ct, now); cancel {
		return nil
	}
	if _, held := c.heldForCallbacks(ct, op, now); held {
		return nil
	}
	if policy.GateUp(op, ct, now, st.Up).Verdict != policy.Send {
		return nil
	}
	b := &begunStep{ex: st.Ex, op: op, now: now, start: now}
	b.ctx, b.span = c.startSpan(st.Ctx, "pollwarden.step", op.ID, op.Contract, trace.SpanKindInternal)
	_, b.claimSpan = c.startSpan(b.ctx, "pollwarden.claim", op.ID, op.Contract, trace.SpanKindInternal)
	b.params = c.ClaimParams(ct, op, now, st.Up, &b.plan)
	return b
}

// finish is the step after its claim's result r, as stepOnce and
// observed end it.
func (b *begunStep) finish(c *Controller, r pollwarden.ClaimResult) (StepResult, error) {
	endClaim(b.claimSpan, r.Lease != nil, r.Err)
	res, err := c.Claimed(b.ctx, b.ex, b.op, b.now, &b.plan, r.Op, r.Lease, r.Err)
	endSpan(b.span, res.Op, err)
	if c.observer != nil && res.Sent {
		c.observer.StepDone(res.Op.Clone(), c.clock.Now().Sub(b.start))
	}
	return res, err
}
