package controller

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// submitJob is submitNew, or, when the id is taken by a submission of the
// same request (policy.ResumesSubmission), its resume: for an embedder
// that drives the controller without package operations, as the demo and
// tests do. operations judges a taken id itself, with the same matcher,
// and calls SubmitNew and DriveSubmission.
func (c *Controller) submitJob(ctx context.Context, ex *contract.Loaded, p policy.NewParams, body []byte) (*pollwarden.Operation, error) {
	fresh, events, err := c.newSubmission(ex.Spec(), p, body)
	if err != nil {
		return nil, err
	}
	op, err := c.submitFresh(ctx, ex, fresh, events)
	if !errors.Is(err, pollwarden.ErrExists) {
		return op, err
	}
	stored, err := c.store.OperationGet(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	if !policy.ResumesSubmission(stored, fresh.Fingerprint) {
		return nil, pollwarden.Refuse(pollwarden.ErrInvalid, "operation_id", "operation %s was not created for this submission (contract %q, fingerprint %s); refusing to resume it with contract %q and another body or variables (fingerprint %s)",
			stored.ID, stored.Contract, short(stored.Fingerprint), fresh.Contract, short(fresh.Fingerprint))
	}
	return c.driveSubmission(ctx, ex, stored)
}

// submitNew records body as a new submission under the contract's submit
// block and drives it until it is settled (waiting, failed or escalated):
// the record (limits, body digest, idempotency key) is durable before
// anything is sent, each send is recorded before it leaves, and the job
// id and status location are recorded before any status request. A taken
// id is pollwarden.ErrExists (pollwarden.ErrPruned for a pruned
// operation's) with nothing written or sent: whether the stored record may
// be resumed is the caller's to judge, against the record it read, so
// there is one matcher and one read.
func (c *Controller) submitNew(ctx context.Context, ex *contract.Loaded, p policy.NewParams, body []byte) (*pollwarden.Operation, error) {
	fresh, events, err := c.newSubmission(ex.Spec(), p, body)
	if err != nil {
		return nil, err
	}
	return c.submitFresh(ctx, ex, fresh, events)
}

// newSubmission builds the submission p asks for, with a new idempotency
// key when the contract sends one.
func (c *Controller) newSubmission(ct *pollwarden.ContractSpec, p policy.NewParams, body []byte) (*pollwarden.Operation, []pollwarden.Event, error) {
	if p.Rand == nil {
		p.Rand = c.factors
	}
	key := ""
	if ct.Submit != nil && ct.Submit.IdempotencyKeyHeader != "" {
		key = newIdempotencyKey()
	}
	return policy.NewSubmission(ct, p, body, key, c.clock.Now())
}

// submitFresh stores fresh and drives it.
func (c *Controller) submitFresh(ctx context.Context, ex *contract.Loaded, fresh *pollwarden.Operation, events []pollwarden.Event) (*pollwarden.Operation, error) {
	if err := c.createUnder(ctx, ex, fresh, events); err != nil {
		return nil, err
	}
	c.changed(fresh, events)
	return c.driveSubmission(ctx, ex, fresh)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// driveSubmission sends the recorded submission until it is settled,
// each send under the operation's lease.
func (c *Controller) driveSubmission(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	ct := ex.Spec()
	for op.Phase.Submitting() {
		next, turn, until, err := c.submitTurnUntil(ctx, ex, op)
		switch {
		case err != nil:
			return next, err
		case turn == turnQuota:
			// The key frees a slot at until: the submission waits for it
			// (the caller's context bounds the wait).
			if err := c.clock.Sleep(ctx, max(until.Sub(c.clock.Now()), 0)); err != nil {
				return op, err
			}
		case turn == turnHeld:
			// Another process is sending it, or died sending it: its
			// lease expires, then the record says what happened.
			if err := c.clock.Sleep(ctx, c.leaseRetry); err != nil {
				return op, err
			}
			if next, err = c.store.OperationGet(ctx, op.ID); err != nil {
				return nil, err
			}
		case turn == turnSettled:
			return next, nil
		case turn == turnAgain:
			now := c.clock.Now()
			if err := c.clock.Sleep(ctx, policy.SubmitRetryAt(ct, now).Sub(now)); err != nil {
				return next, err
			}
		}
		op = next
	}
	return op, nil
}

// turn is what one turn of a submission (submitTurn) left to do.
type turn int

const (
	turnSettled turn = iota // nothing more to send now: answered, escalated, or not submitting
	turnHeld                // another owner holds the lease
	turnAgain               // answered ambiguously with a stored key: to be sent again after the backoff
	turnSent                // sent and answered; the record says what next
	turnQuota               // held by the key's shared quota: nothing sent or recorded; send once a slot frees
)

// submitTurn takes one claim of op's submission and does what the
// record allows: sends a pending attempt, re-sends an interrupted one with
// the stored key, or escalates an interrupted one without a key (or one
// past its deadline) with the question for a person. At most one request
// leaves.
func (c *Controller) submitTurn(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (*pollwarden.Operation, turn, error) {
	next, t, _, err := c.submitTurnUntil(ctx, ex, op)
	return next, t, err
}

// submitTurnUntil is submitTurn that also says, for turnQuota, when the
// key frees the slot.
func (c *Controller) submitTurnUntil(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (*pollwarden.Operation, turn, time.Time, error) {
	ct := ex.Spec()
	now := c.clock.Now()
	var events []pollwarden.Event
	send := false
	var held *quotaHeld
	take := quotaTake(ct, now, false, &held)
	grant := take.Grant
	take.Grant = func(ks *pollwarden.KeyState, o *pollwarden.Operation, at time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
		if !send {
			// This turn sends nothing (it escalates): nothing to take.
			held = nil
			return nil, pollwarden.KeyGrant{OK: true}
		}
		return grant(ks, o, at)
	}
	saved, lease, err := c.store.OperationClaim(ctx, pollwarden.ClaimParams{
		OperationID: op.ID, Owner: c.owner, Now: now, TTL: c.leaseTTL(ct), Have: op,
		Change: func(fresh *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
			var next *pollwarden.Operation
			next, events, send = policy.SubmitTurn(fresh, ct, now)
			return next, events
		},
		// The submission carries the credential: it takes from the key's
		// quota, and a held one records nothing and is sent once a slot
		// frees.
		Quota: take,
	})
	switch {
	case errors.Is(err, pollwarden.ErrLeaseHeld):
		return op, turnHeld, time.Time{}, nil
	case err != nil:
		return nil, turnSettled, time.Time{}, err
	case held != nil:
		return op, turnQuota, held.grant.Until, nil
	case lease == nil:
		cur, err := c.store.OperationGet(ctx, op.ID)
		return cur, turnSettled, time.Time{}, err
	}
	c.changed(saved, events)
	if !send {
		err := c.store.LeaseRelease(context.WithoutCancel(ctx), lease)
		return saved, turnSettled, time.Time{}, err
	}
	next, again, err := c.sendSubmission(ctx, ex, saved, lease)
	if again {
		return next, turnAgain, time.Time{}, err
	}
	return next, turnSent, time.Time{}, err
}

// stepSubmission is the daemon's step of an operation left in
// PhaseSubmitting, typically by a process that died between recording
// the submission and recording its answer. It waits until no live
// submitter can still be sending it (policy.SubmitOrphanDue: the lease's
// lifetime after the last send or answer), then takes one turn: the
// submission is re-sent only with the stored idempotency key, and
// otherwise escalated integration_failure with the question for a person.
// Until says when to look again while it is still submitting.
func (c *Controller) stepSubmission(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (StepResult, error) {
	ct := ex.Spec()
	if op.Contract != ct.Name {
		return StepResult{}, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s belongs to contract %q, not %q", op.ID, op.Contract, ct.Name)
	}
	if !op.Phase.Submitting() || op.Submission == nil {
		return StepResult{Op: op}, nil
	}
	now := c.clock.Now()
	if due := policy.SubmitOrphanDue(op, c.leaseTTL(ct)); now.Before(due) {
		return StepResult{Op: op, Until: due}, nil
	}
	next, t, until, err := c.submitTurnUntil(ctx, ex, op.Clone())
	if err != nil || next == nil {
		return StepResult{Op: next}, err
	}
	res := StepResult{Op: next, Sent: t == turnSent || t == turnAgain}
	switch {
	case t == turnQuota:
		res.Until = until
	case t == turnHeld:
		res.Until = now.Add(c.leaseTTL(ct))
	case t == turnAgain:
		res.Until = policy.SubmitRetryAt(ct, c.clock.Now())
	case next.Phase.Polling():
		res.Until = next.NextPollAt
	}
	return res, nil
}

// sendSubmission sends the attempt recorded on op (whose lease this
// process holds) and records the answer with the lease's release. The
// send is finished even if the caller goes away, so its answer is kept.
func (c *Controller) sendSubmission(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, lease *pollwarden.Lease) (*pollwarden.Operation, bool, error) {
	ct := ex.Spec()
	released := false
	defer func() {
		if !released {
			_ = c.store.LeaseRelease(context.WithoutCancel(ctx), lease)
		}
	}()
	attempt := op.Submission.Attempts
	sendCtx, span := c.startSpan(ctx, "pollwarden.submit.request", op.ID, ct.Name, trace.SpanKindClient)
	res := c.callSubmit(context.WithoutCancel(sendCtx), ct, op)
	endSubmitRequest(span, attempt, res)
	now := c.clock.Now()
	next, events, again := policy.SubmitAnswered(op, ct, attempt, res, now)
	err := c.saveRelease(ctx, next, lease, events, now)
	released = err == nil || errors.Is(err, pollwarden.ErrLeaseLost)
	if !errors.Is(err, pollwarden.ErrLeaseLost) {
		return next, again, err
	}
	bg := context.WithoutCancel(ctx)
	var re bool
	saved, err := c.retryBusy(bg, func() (*pollwarden.Operation, error) {
		cur, err := c.store.OperationGet(bg, op.ID)
		if err != nil {
			return nil, err
		}
		now := c.clock.Now()
		n, evs, a := policy.SubmitAnswered(cur, ct, attempt, res, now)
		re = a
		if len(evs) == 0 {
			return cur, nil
		}
		return n, c.save(bg, n, evs, now)
	})
	return saved, re, err
}

// callSubmit sends one submission and reduces the answer to what the
// record keeps, checking the status location against the contract's
// origins before it is kept.
func (c *Controller) callSubmit(ctx context.Context, ct *pollwarden.ContractSpec, op *pollwarden.Operation) policy.SubmitResult {
	u, err := contract.SubmitURL(ct, op.Vars)
	if err != nil {
		return policy.SubmitResult{Detail: err.Error()}
	}
	a := c.prober.Submit(ctx, ct, u, op.Submission.Body, op.Submission.IdempotencyKey)
	r := policy.SubmitResult{Sent: a.Sent, Status: a.Status, Transport: a.Transport, RequestID: a.RequestID,
		JobID: a.JobID, Problem: a.Problem, ProviderError: a.ProviderError}
	switch {
	case !a.Sent:
		r.Detail = a.TransportDetail
		return r
	case a.Transport == pollwarden.TransportDNS || a.Transport == pollwarden.TransportRefused || a.Transport == pollwarden.TransportTLS:
		// The connection was never made: the provider cannot have it.
		r.Sent = false
		r.Detail = fmt.Sprintf("%s %s: %s: %s; the provider was not reached", ct.Submit.Method, u, a.Transport, a.TransportDetail)
		return r
	case a.Transport != "":
		r.Detail = fmt.Sprintf("%s %s: %s: %s", ct.Submit.Method, u, a.Transport, a.TransportDetail)
		return r
	}
	r.Detail = fmt.Sprintf("%s %s answered %d", ct.Submit.Method, u, a.Status)
	if a.JobID != "" {
		r.Detail += ", job " + a.JobID
	}
	if a.Status < 200 || a.Status >= 300 || a.Problem != "" || ct.Submit.StatusLocation == "" {
		return r
	}
	loc, err := resolveLocation(u, a.Location)
	if err == nil {
		err = contract.CheckOrigin(ct, loc)
	}
	if err != nil {
		r.Refused = err.Error()
		return r
	}
	r.StatusURL = loc
	r.Detail += ", status at " + pollwarden.ShownURL(loc)
	return r
}

// resolveLocation makes a relative status location absolute against the
// submit URL, as a Location header may be.
func resolveLocation(base, loc string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	l, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("the status location is not a URL: %w", err)
	}
	return b.ResolveReference(l).String(), nil
}

// newIdempotencyKey draws a random UUID (version 4), the form providers
// document for Idempotency-Key.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
