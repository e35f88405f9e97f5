package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Step is a decided change: the next record and the events explaining it.
type Step struct {
	Op     *pollwarden.Operation
	Events []pollwarden.Event
}

// Decide turns one observation into the next record (R1–R3, R6–R8,
// R12–R14, R17, R18). The HTTP result and the job's state are read as two
// facts: only a success state with valid result fields succeeds; a pending
// state only schedules a later observation. op must be the record as
// reserved for this request.
func Decide(op *pollwarden.Operation, c *pollwarden.ContractSpec, obs *pollwarden.Observation, now time.Time, r Rand) Step {
	// A decision changes neither map in place: next shares them with op.
	next := op.CloneNext()
	if !ValidFactor(next.JitterFactor) {
		// A record written before the factor was kept gets its own now,
		// and keeps it from this save on (R5: drawn per operation).
		next.JitterFactor = DrawFactor(r)
	}
	// Slot 0 is kept for the response event, which every path writes once.
	d := &decider{op: next, c: c, obs: obs, now: now, r: r, events: make([]pollwarden.Event, 1, 4)}
	d.record()
	d.classify()
	return Step{Op: next, Events: d.events}
}

type decider struct {
	op     *pollwarden.Operation
	c      *pollwarden.ContractSpec
	obs    *pollwarden.Observation
	now    time.Time
	r      Rand
	events []pollwarden.Event
	resp   pollwarden.EventData
}

// record keeps the response metadata whatever it means (R12: code, time,
// provider request id).
func (d *decider) record() {
	op, obs := d.op, d.obs
	op.CompletedPolls++
	at := obs.ReceivedAt
	if at.IsZero() {
		at = d.now
	}
	op.LastHTTP = obs.Status
	// op is Decide's own clone, so a time it already has is its own
	// storage: overwriting it saves an allocation per answer.
	if op.LastHTTPAt != nil {
		*op.LastHTTPAt = at
	} else {
		t := at
		op.LastHTTPAt = &t
	}
	op.LastRequestID = obs.RequestID
	dl := op.DeadlineAt
	d.resp = pollwarden.EventData{
		HTTPStatus:   obs.Status,
		Transport:    obs.Transport,
		Detail:       obs.TransportDetail,
		RequestID:    obs.RequestID,
		RetryAfter:   obs.RetryAfter,
		RequestsUsed: op.StatusRequestsUsed,
		MaxRequests:  op.MaxStatusRequests,
		DeadlineAt:   &dl,
	}
}

func (d *decider) classify() {
	obs := d.obs
	switch s := obs.Status; {
	case obs.Transport == pollwarden.TransportRedirect:
		// A redirect off the allowed hosts will not fix itself by waiting.
		d.escalate(pollwarden.ReasonIntegrationFailure, obs.TransportDetail)
	case obs.Transport != "" || s == 0:
		d.transportFailure(obs.Transport)
	case d.notModified():
		// The answer to If-None-Match: the job is as it was.
		d.unchanged()
	case obs.Body.FromStatus:
		// The contract maps this code to a state (a 202 while running, a
		// 404 that ends a deletion wait).
		d.body()
	case obs.RateLimitSignal != "":
		// The contract says this answer is a rate limit (GitHub's 403 with
		// x-ratelimit-remaining 0), not a refused credential.
		d.rateLimited()
	case s == 401 || s == 403: // Unauthorized, Forbidden
		d.denied(s)
	case s == 429: // Too Many Requests
		d.rateLimited()
	case s >= 500:
		d.transportFailure(fmt.Sprintf("http_%d", s))
	case s == 404: // Not Found
		d.notFound()
	case s >= 200 && s < 300:
		d.body()
	default:
		d.escalate(pollwarden.ReasonIntegrationFailure, fmt.Sprintf("the contract does not explain HTTP %d", s))
	}
}

// transportFailure counts a failure that hid the job's state (R12); a
// timeout is an ambiguous delivery and was already counted as sent.
func (d *decider) transportFailure(class string) {
	d.op.TransportFailuresUsed++
	d.resp.FailuresUsed = d.op.TransportFailuresUsed
	if d.op.TransportFailuresUsed >= d.op.MaxTransportFailures {
		d.escalate(pollwarden.ReasonProviderFailure, fmt.Sprintf("%d of %d transport failures (last: %s)",
			d.op.TransportFailuresUsed, d.op.MaxTransportFailures, class))
		return
	}
	d.schedule(false)
}

// rateLimited handles 429 (R8): Retry-After is a minimum; without it the
// delay rises sharply. Either way the answer counts against the
// rate-limit budget.
func (d *decider) rateLimited() {
	d.op.RateLimitedUsed++
	d.resp.RateLimited = d.op.RateLimitedUsed
	if d.op.RateLimitedUsed >= d.op.MaxRateLimited {
		what := "429 Too Many Requests"
		if d.obs.RateLimitSignal != "" {
			what = "rate limits (last: " + d.obs.RateLimitSignal + ")"
		}
		d.escalate(pollwarden.ReasonRateLimited, fmt.Sprintf("%d of %d answers were %s",
			d.op.RateLimitedUsed, d.op.MaxRateLimited, what))
		return
	}
	d.schedule(true)
}

// notFound applies R14: a 404 inside the contract's eventual-consistency
// window is pending, afterwards an integration failure.
func (d *decider) notFound() {
	if d.now.Sub(d.op.StartedAt) < d.c.NotFoundPendingFor {
		d.resp.Decision = "404 within not_found.pending_for, treated as pending"
		d.schedule(false)
		return
	}
	d.escalate(pollwarden.ReasonIntegrationFailure, fmt.Sprintf("404 for job %s, %s after start, outside not_found.pending_for (%s)",
		d.op.ProviderJobID, d.now.Sub(d.op.StartedAt).Round(time.Millisecond), d.c.NotFoundPendingFor))
}

// body reads the job's state (R2, R3) from a 2xx answer.
func (d *decider) body() {
	b := &d.obs.Body
	if b.Problem != "" {
		d.escalate(pollwarden.ReasonIntegrationFailure, b.Problem)
		return
	}
	d.observeState(b.State, b.ProviderState)
	resetTransportFailures(d.op, d.c)
	d.keepETag()
	switch classOf(d.c, b.State) {
	case classSuccess:
		d.success()
	case classFailure:
		d.op.ProviderError = b.Error
		d.finish(pollwarden.PhaseFailed, "the provider reports failure")
	case classCancelled:
		d.finish(pollwarden.PhaseCancelled, "the provider reports the job cancelled; nothing is resubmitted")
	case classExpired:
		d.finish(pollwarden.PhaseExpired, "the provider reports the job expired; nothing is resubmitted")
	case classPending:
		d.pending()
	default:
		d.escalate(pollwarden.ReasonUnknownState, fmt.Sprintf("state %q is not in the contract's state table", b.State))
	}
}

func (d *decider) observeState(s, provider string) {
	d.resp.State, d.resp.ProviderState = s, provider
	if s != d.op.LastState || provider != d.op.LastProviderState {
		d.events = append(d.events, newEvent(d.op, d.now, pollwarden.EventStateChanged,
			pollwarden.EventData{State: s, PrevState: d.op.LastState, ProviderState: provider}))
	}
	d.op.LastState, d.op.LastProviderState = s, provider
}

// success accepts the result only if every required field validates (R3).
func (d *decider) success() {
	res, problem := validateResult(d.c.Result.Require, d.obs.Body.Fields)
	if problem != "" {
		d.escalate(pollwarden.ReasonIntegrationFailure, "success state without a valid result: "+problem)
		return
	}
	d.op.Result = res
	d.finish(pollwarden.PhaseSucceeded, "success with a valid result")
}

// pending checks the job's own expiry (R3) before scheduling.
func (d *decider) pending() {
	if v := d.obs.Body.JobExpiresAt; v != nil {
		t, err := expiryTime(v)
		if err != nil {
			d.reject("job_expires_at: " + err.Error())
		} else {
			d.op.ProviderExpiresAt = &t
		}
	}
	if exp := d.op.ProviderExpiresAt; exp != nil && d.now.After(*exp) {
		d.escalate(pollwarden.ReasonIntegrationFailure, fmt.Sprintf("state %q after the job's reported expiry %s",
			d.op.LastState, exp.UTC().Format(time.RFC3339)))
		return
	}
	d.schedule(false)
}

func (d *decider) finish(p pollwarden.Phase, why string) {
	d.op.Phase = p
	t := d.now
	d.op.FinishedAt = &t
	d.resp.Decision = string(p) + ": " + why
	d.flush()
	kind := pollwarden.EventFinished
	if p == pollwarden.PhaseSucceeded {
		kind = pollwarden.EventSucceeded
	}
	d.events = append(d.events, newEvent(d.op, d.now, kind, pollwarden.EventData{
		State: d.op.LastState, Decision: string(p), ProviderError: d.op.ProviderError,
		RequestsUsed: d.op.StatusRequestsUsed, MaxRequests: d.op.MaxStatusRequests, Elapsed: elapsed(d.op, d.now),
	}))
}

func (d *decider) escalate(r pollwarden.Reason, why string) {
	d.resp.Decision = "escalated " + string(r)
	d.resp.Reason = r
	d.flush()
	d.events = append(d.events, Escalate(d.op, d.c, r, why, d.now)...)
}

// flush writes the response event: the decision record of R24, placed
// before the consequences it explains.
func (d *decider) flush() {
	d.events[0] = newEvent(d.op, d.now, pollwarden.EventResponseReceived, d.resp)
}

func (d *decider) reject(why string) {
	d.events = append(d.events, newEvent(d.op, d.now, pollwarden.EventHintRejected, pollwarden.EventData{Hint: why}))
}

// denied stops at a refused credential (R13): it is not retried, and its
// keyed fingerprint is kept so that a changed one can be offered
// (retry_credential). The provider's own words, redacted, go in the story.
func (d *decider) denied(status int) {
	d.op.RefusedCredential = d.obs.RefusedCredential
	why := fmt.Sprintf("the provider answered %d; the credential is not retried", status)
	if d.obs.RefusedCredential != nil {
		why += " unless it changes"
	}
	if d.obs.DeniedBody != "" {
		why += "; the provider said: " + d.obs.DeniedBody
	}
	d.escalate(pollwarden.ReasonAuthorizationDenied, why)
}
