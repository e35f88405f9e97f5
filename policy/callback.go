package policy

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// CallbackWake is the answer of Callback.
type CallbackWake struct {
	// Woken is true when the record changed: Op has its earlier NextPollAt
	// and must be saved, with Events, before the scheduler looks again.
	Woken bool
	Op    *pollwarden.Operation
	// Events holds one next_check_scheduled event when Woken.
	Events []pollwarden.Event
	// Why says, when not Woken, why the callback changed nothing.
	Why string
	// Replaced is, when Woken, the time the operation's own schedule had
	// chosen: where a CallbackTrust should count this end (Observe).
	Replaced time.Time
}

// Callback is what a verified provider callback ("the job ended") does to
// an operation: it moves the next status request to now, as early as the
// gates allow, and nothing else. The poll stays the source of truth: the
// callback's body is never read as the result, and the request it wakes
// goes through Gate like any other (deadline, budget), then the
// scheduler's rate ceiling. So a lost, late, duplicated or forged callback
// can change when the operation is looked at, never what it concludes.
//
// It does not wake an operation that is final, already due, inside a
// Retry-After window (R7), or backing off after a 429 (R8): those times
// are the provider's own minimums. Nor does it wake one sooner than the
// contract's base delay after its last answer, so a burst of callbacks
// (duplicates, or a provider calling back on every change) costs at most
// one request per base delay, within the budget.
func Callback(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) CallbackWake {
	switch {
	case op.Phase != pollwarden.PhaseWaiting:
		return CallbackWake{Op: op, Why: "the operation is " + string(op.Phase)}
	case op.NextPollSource == pollwarden.DelayRetryAfter:
		return CallbackWake{Op: op, Why: "the provider's Retry-After window is still open"}
	case op.LastHTTP == 429:
		return CallbackWake{Op: op, Why: "the provider is rate limiting this operation"}
	}
	at := now
	if op.LastHTTPAt != nil {
		at = later(at, op.LastHTTPAt.Add(Floor(c)))
	}
	if !at.Before(op.NextPollAt) {
		return CallbackWake{Op: op, Why: "the next status request is already due by then"}
	}
	next := op.Clone()
	next.NextPollAt, next.NextPollSource, next.NextPollSpread = at, pollwarden.DelayCallback, false
	t := at
	ev := newEvent(next, now, pollwarden.EventNextCheckScheduled, pollwarden.EventData{
		NextPollAt: &t, DelaySource: pollwarden.DelayCallback,
		RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		Detail: callbackDetail(at, now),
	})
	return CallbackWake{Woken: true, Op: next, Events: []pollwarden.Event{ev}, Replaced: op.NextPollAt}
}

// callbackDetail is the audit's line for a wake: "now" only when the
// request may go at once, else when the limits let it.
func callbackDetail(at, now time.Time) string {
	if at.Equal(now) {
		return "callback received, verified; next poll now"
	}
	return "callback received, verified; next poll at " + at.UTC().Format(time.RFC3339) + ", the earliest the contract's base delay allows"
}

// SafetyNetFactor times backoff.max is the raw delay of the safety-net
// poll while a contract's callbacks are trusted (CallbackHold): with the
// specification's contract (max 120 s) 4–5.6 min once mapped like a
// capped delay. Measured in the callback scenario: it adds 0.07 requests
// per job, and callbacks that stop arriving are noticed within minutes.
const SafetyNetFactor = 4

// CallbackHold is the poll schedule while the caller trusts a contract's
// callbacks (CallbackTrust): an operation whose next poll is local backoff
// after a pending answer waits instead until its last answer plus a
// safety-net delay, SafetyNetFactor × backoff.max scaled by its factor as
// a capped delay is. The callback is then what wakes it when the job ends,
// and the safety net bounds how late an operation whose callback is lost
// is seen. Like a provider hint (R6), the safety net may exceed
// backoff.max, never the deadline: a hold that would reach it is not made.
// ok is false when the record keeps its own time.
func CallbackHold(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time, trusted bool) (until time.Time, ok bool) {
	if !trusted || op.Phase != pollwarden.PhaseWaiting || op.NextPollSource != pollwarden.DelayLocalBackoff ||
		op.LastHTTP != 200 || op.LastHTTPAt == nil || op.CompletedPolls == 0 {
		return time.Time{}, false
	}
	f := op.JitterFactor
	if !ValidFactor(f) {
		f = (FactorMin + FactorMax) / 2
	}
	d := time.Duration(CappedFactor(f) * float64(SafetyNetFactor*c.Backoff.Max))
	until = op.LastHTTPAt.Add(d)
	if !until.After(op.NextPollAt) || !until.After(now) || !until.Before(op.DeadlineAt) {
		return time.Time{}, false
	}
	return until, true
}

// CallbackTrust is what a caller has learned about whether a contract's
// callbacks arrive: a decayed count of the job ends it saw and how many
// were announced by a callback. It starts untrusted, so a contract whose
// callbacks never come polls exactly as one without callbacks. It is a
// value: the caller keeps one per contract and passes it in.
//
// An end announced by a callback must be counted when the operation's own
// schedule would have polled (CallbackWake.Replaced), not when the
// callback arrived: a lost callback shows only at a poll, so counting the
// announced ends sooner would trust callbacks before the lost ones had a
// chance to show (with half the callbacks lost, the first ends seen are
// all announced ones). An end a poll saw first counts as silent at once,
// and as announced when its callback comes later (LateCallback): deferring
// it instead would bias the count toward trust in the same way.
type CallbackTrust struct {
	announced, silent float64
}

// The trust rule: at least trustMinAnnounced announced ends and at least
// trustShare of the ends seen announced; counts halve past trustWindow, so
// the verdict follows the last few hundred ends.
const (
	trustMinAnnounced = 16
	trustShare        = 0.8
	trustWindow       = 256
)

// Observe records one job end: announced is true when a callback for it
// arrived (before the poll that saw the end; one arriving after it is
// LateCallback).
func (t CallbackTrust) Observe(announced bool) CallbackTrust {
	if announced {
		t.announced++
	} else {
		t.silent++
	}
	if t.announced+t.silent > trustWindow {
		t.announced, t.silent = t.announced/2, t.silent/2
	}
	return t
}

// LateCallback records that a callback arrived for a job whose end a poll
// had already seen and counted as silent: it was announced after all.
func (t CallbackTrust) LateCallback() CallbackTrust {
	if t.silent >= 1 {
		t.silent--
		t.announced++
	}
	return t
}

// Trusted reports whether callbacks arrive reliably enough to poll only
// as a safety net (CallbackHold).
func (t CallbackTrust) Trusted() bool {
	return t.announced >= trustMinAnnounced && t.announced >= trustShare*(t.announced+t.silent)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
