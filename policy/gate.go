package policy

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// Verdict is what the pre-request checks allow.
type Verdict int

// The verdicts, in the order the controller handles them.
const (
	// Done: the operation is terminal or escalated; nothing is sent.
	Done Verdict = iota
	// Stop: a limit was reached now; the returned record escalates and
	// must be saved.
	Stop
	// Wait: the next request is not due before Until.
	Wait
	// Send: one status request may be reserved and sent now.
	Send
)

// GateResult is the answer of Gate.
type GateResult struct {
	Verdict Verdict
	Until   time.Time
	Op      *pollwarden.Operation
	Events  []pollwarden.Event
}

// Gate runs the controller's checks before any request, in the fixed order
// of the specification: terminal, deadline (R11, R18: checked before the
// request, whatever the state just did), request budget, approval of an
// unsafe status call (R16), then the next-poll time. It is called before
// the lease and again after the reload under the lease. A late wake-up
// passes the time check once and so sends at most one request (R9).
func Gate(op *pollwarden.Operation, c *pollwarden.Contract, now time.Time) GateResult {
	switch {
	case op.Phase.Terminal():
		return GateResult{Verdict: Done, Op: op}
	case !now.Before(op.DeadlineAt):
		return stop(op, c, pollwarden.ReasonDeadlineExceeded, "the deadline arrived before the next status request", now)
	case op.StatusRequestsUsed >= op.MaxStatusRequests:
		return stop(op, c, pollwarden.ReasonRequestBudgetExhausted, "every allowed status request was used", now)
	case c.Status.UnsafeMethod && op.ApprovedCalls <= 0:
		return stop(op, c, pollwarden.ReasonIntegrationFailure,
			"the status call "+c.Status.Method+" is not a safe method; each call needs an approver", now)
	case now.Before(op.NextPollAt):
		return GateResult{Verdict: Wait, Until: op.NextPollAt, Op: op}
	}
	return GateResult{Verdict: Send, Op: op}
}

func stop(op *pollwarden.Operation, c *pollwarden.Contract, r pollwarden.Reason, detail string, now time.Time) GateResult {
	next := op.Clone()
	evs := Escalate(next, c, r, detail, now)
	return GateResult{Verdict: Stop, Op: next, Events: evs}
}

// StillInTime re-checks the deadline of a reserved record just before the
// request leaves (R11, R18): the reservation's write may have waited behind
// other writers. Past the deadline the result is Stop with the record
// escalated deadline_exceeded, the reservation still counted and nothing
// sent; otherwise Send.
func StillInTime(reserved *pollwarden.Operation, c *pollwarden.Contract, now time.Time) GateResult {
	if now.Before(reserved.DeadlineAt) {
		return GateResult{Verdict: Send, Op: reserved}
	}
	return stop(reserved, c, pollwarden.ReasonDeadlineExceeded,
		"the deadline arrived while the request was being reserved; nothing was sent", now)
}

// Reserve counts the request before it is sent (R11): the returned record
// has one more status request used (and one fewer approved call for an
// unsafe method) and must be persisted before sending, so a crash leaves
// an unused reservation, never an unrecorded request.
func Reserve(op *pollwarden.Operation, c *pollwarden.Contract, now time.Time) (*pollwarden.Operation, []pollwarden.Event) {
	next := op.Clone()
	next.StatusRequestsUsed++
	if c.Status.UnsafeMethod {
		next.ApprovedCalls--
	}
	dl := next.DeadlineAt
	ev := newEvent(next, now, pollwarden.EventRequestSent, pollwarden.EventData{
		State:        next.LastState,
		RequestsUsed: next.StatusRequestsUsed,
		MaxRequests:  next.MaxStatusRequests,
		DeadlineAt:   &dl,
	})
	return next, []pollwarden.Event{ev}
}

func newEvent(op *pollwarden.Operation, now time.Time, k pollwarden.EventKind, d pollwarden.EventData) pollwarden.Event {
	return pollwarden.Event{OperationID: op.ID, At: now, Kind: k, Data: d}
}
