package policy

import (
	"fmt"
	"hash/fnv"
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
	// Spread is set with Wait when Op has a new NextPollAt that must be
	// saved, with Events, before sleeping: a late wake-up was spread (R9),
	// or a poll waits for the safety net (CallbackLedger.HoldWaiting).
	Spread bool
}

// Gate runs the controller's checks before any request, in the fixed order
// of the specification: terminal, deadline (R11, R18: checked before the
// request, whatever the state just did), request budget, approval of an
// unsafe status call (R16), then the next-poll time. It is called before
// the lease and again after the reload under the lease. A late wake-up
// passes the time check once and so sends at most one request (R9); one
// later than the contract's base delay is first spread (see spreadLate).
func Gate(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) GateResult {
	return GateUp(op, c, now, Uptime{})
}

// Uptime is the caller's word on why a wake-up may be late, which the
// record alone cannot tell: a daemon that is merely busy (more work due
// than its concurrency) starts steps late too, and spreading those would
// postpone work that is already behind. It is a value, so Gate stays a
// pure function of what it is given.
type Uptime struct {
	// Since is when the caller last started, or resumed after a stall,
	// and has been running since. A wake-up due at or after Since fell
	// due while the caller was running, so it is late only because the
	// caller is busy: it sends at once, however late. One due before
	// Since fell due while no process (or a stalled one) was there to
	// send it, and is spread (R9, see spreadLate). Zero means the caller
	// cannot tell, and every late wake-up counts as missed while down.
	Since time.Time
}

// GateUp is Gate with the caller's Uptime: a scheduler passes when it
// started or last resumed, so only wake-ups missed while it was not
// running are spread.
func GateUp(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time, up Uptime) GateResult {
	switch {
	case !op.Phase.Polling():
		return GateResult{Verdict: Done, Op: op}
	case !now.Before(op.DeadlineAt):
		return stop(op, c, pollwarden.ReasonDeadlineExceeded, "the deadline arrived before the next status request", now)
	case op.StatusRequestsUsed >= op.MaxStatusRequests:
		return stop(op, c, pollwarden.ReasonRequestBudgetExhausted, "every allowed status request was used", now)
	case c.Status.EachCallNeedsApproval() && op.ApprovedCalls <= 0:
		return stop(op, c, pollwarden.ReasonIntegrationFailure, approvalDetail(op, c), now)
	case now.Before(op.NextPollAt):
		return GateResult{Verdict: Wait, Until: op.NextPollAt, Op: op}
	}
	if g, ok := spreadLate(op, c, now, up); ok {
		return g
	}
	return GateResult{Verdict: Send, Op: op}
}

// spreadLate spreads the one request of a late wake-up (R9). When the
// controller was down, or the process slept, every operation that fell due
// meanwhile is overdue at the same moment; sending all their requests then
// is a burst the provider sees as a herd (in the simulated restart, 15× the
// surrounding rate). So an operation overdue by more than the contract's
// base delay does not send at once: its request moves to now + u·d, where d
// is the delay it would wait next and u is uniform in [0, 1), never at or
// past the deadline (then it sends now, while it still may). The moved
// time is saved (Spread) and marked, so the wake-up at that time sends
// however late it is: a request is postponed once, never chased.
//
// Only a wake-up missed while no process was running is spread: one that
// fell due after up.Since is late because the caller is busy, and sends.
// The first request of an operation is not spread: no interval was
// missed. Nor is the first request after an approver's extension: it is
// due at the decision, a fresh start an approver is waiting on, and a
// daemon that learns of a decision made elsewhere (another process, the
// CLI) only on its next look would otherwise take that look for a late
// wake-up. Nor is the request a provider callback asked for (it is news
// to act on). u is derived from the operation's id and poll count rather than
// a random source, so Gate stays a pure function of the record and the
// time and gives the same answer before and after the lease.
func spreadLate(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time, up Uptime) (GateResult, bool) {
	if op.NextPollSpread || op.CompletedPolls == 0 || op.NextPollSource == pollwarden.DelayManualExtension ||
		op.NextPollSource == pollwarden.DelayCallback ||
		now.Sub(op.NextPollAt) <= Floor(c) || (!up.Since.IsZero() && !op.NextPollAt.Before(up.Since)) {
		return GateResult{}, false
	}
	d := Delay(c.Backoff, op.CompletedPolls, op.JitterFactor)
	at := now.Add(time.Duration(spreadFraction(op) * float64(d)))
	if !at.Before(op.DeadlineAt) {
		return GateResult{}, false
	}
	next := op.Clone()
	next.NextPollAt, next.NextPollSpread = at, true
	t := at
	ev := newEvent(next, now, pollwarden.EventNextCheckScheduled, pollwarden.EventData{
		NextPollAt: &t, DelaySource: next.NextPollSource,
		RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		Detail: fmt.Sprintf("late wake-up, %s after the check was due, with nothing running meanwhile: the missed checks are not made up; one request is sent, a little later so that late operations do not all send at once",
			now.Sub(op.NextPollAt).Round(time.Second)),
	})
	return GateResult{Verdict: Wait, Until: at, Op: next, Events: []pollwarden.Event{ev}, Spread: true}, true
}

// spreadFraction maps the operation's id and poll count to [0, 1),
// uniformly enough to spread a crowd (FNV-1a, then a 64-bit mix).
func spreadFraction(op *pollwarden.Operation) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", op.ID, op.CompletedPolls)
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

func stop(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, detail string, now time.Time) GateResult {
	next := op.Clone()
	evs := Escalate(next, c, r, detail, now)
	return GateResult{Verdict: Stop, Op: next, Events: evs}
}

// StillInTime re-checks the deadline of a reserved record just before the
// request leaves (R11, R18): the reservation's write may have waited behind
// other writers. Past the deadline the result is Stop with the record
// escalated deadline_exceeded, the reservation still counted and nothing
// sent; otherwise Send.
func StillInTime(reserved *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) GateResult {
	if now.Before(reserved.DeadlineAt) {
		return GateResult{Verdict: Send, Op: reserved}
	}
	return stop(reserved, c, pollwarden.ReasonDeadlineExceeded,
		"the deadline arrived while the request was being reserved; nothing was sent", now)
}

// CountRequest counts the status request before it is sent (R11): the
// returned record has one more status request used (and one fewer approved
// call for an unsafe method) and must be persisted before sending, so a
// crash leaves an unused count, never an unrecorded request.
func CountRequest(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (*pollwarden.Operation, []pollwarden.Event) {
	next := op.Clone()
	next.StatusRequestsUsed++
	next.NextPollSpread, next.HeldBy = false, ""
	if c.Status.EachCallNeedsApproval() {
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
