package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/pollwarden/pollwarden"
)

// RequestCancel records an approver's cancel at the provider (R20, R23)
// before anything is sent: the decision, the phase cancelling and the
// cancel record go into one write, so that a crash during the call leaves
// a cancel on the record, never an unrecorded one. The caller sends the
// request only when next is non-nil, and then records its answer with
// CancelAnswered. observeAt is when the operation is next looked at if the
// sender never records the answer (the sender's lease has expired by then).
//
// A cancel may be asked for a waiting operation at any time, or as the
// answer to an escalation that offers it. When a cancel may already have
// reached the provider, a second one sends nothing unless the contract
// documents cancel as idempotent: next is then nil, with no error, and
// the record is answered as it is.
func RequestCancel(op *pollwarden.Operation, c *pollwarden.ContractSpec, p DecisionParams, now, observeAt time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	if err := CheckQuestion(op, p.Escalation); err != nil {
		return nil, nil, err
	}
	if c.Cancel == nil {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "contract %s documents no cancel action, so cancel at provider is not offered", c.Name)
	}
	if !p.Actor.Role.CanGrant() {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrForbidden, "option", "%q grants new authority; only an approver may choose it (%s is %s)",
			pollwarden.OptionCancel, p.Actor.Name, p.Actor.Role)
	}
	if op.Cancel.InForce() && !c.Cancel.Idempotent {
		return nil, nil, nil
	}
	switch op.Phase {
	case pollwarden.PhaseWaiting, pollwarden.PhaseCancelling:
	case pollwarden.PhaseEscalated:
		if op.Escalation == nil || !slices.ContainsFunc(op.Escalation.Options, func(o pollwarden.Option) bool { return o.ID == pollwarden.OptionCancel }) {
			return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s is escalated %s and does not offer cancel at provider", op.ID, op.Reason)
		}
	default:
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s is %s; there is nothing to cancel", op.ID, op.Phase)
	}
	next := op.Clone()
	actor := p.Actor
	attempts := 1
	if op.Cancel != nil {
		attempts = op.Cancel.Attempts + 1
	}
	what := "cancel at provider requested; recorded before it is sent"
	if attempts > 1 && op.Cancel.InForce() {
		what = fmt.Sprintf("cancel at provider requested again (request %d; the contract documents cancel as idempotent); recorded before it is sent", attempts)
	}
	ev := newEvent(next, now, pollwarden.EventDecision, pollwarden.EventData{
		Actor: &actor, Option: pollwarden.OptionCancel, Detail: p.Note, State: op.LastState, Reason: op.Reason,
		Elapsed: elapsed(op, now), RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests,
		FailuresUsed: op.TransportFailuresUsed, RateLimited: op.RateLimitedUsed, Decision: what,
	})
	next.LastDecision = decisionRecord(op, pollwarden.OptionCancel, actor, now, what)
	next.Phase, next.Reason, next.Escalation, next.FinishedAt = pollwarden.PhaseCancelling, "", nil, nil
	next.NextPollAt, next.NextPollSource, next.NextPollSpread = observeAt, pollwarden.DelayLocalBackoff, false
	next.Cancel = &pollwarden.CancelRecord{State: pollwarden.CancelRecorded, RequestedAt: now, RequestedBy: actor, Attempts: attempts}
	return next, []pollwarden.Event{ev}, nil
}

// CancelAnswer is what became of one cancel request.
type CancelAnswer struct {
	// Sent is false when nothing left the process (Detail says why).
	Sent bool
	// Status is the provider's HTTP status; 0 when no answer came.
	Status int
	// Transport classifies a failure that left no answer.
	Transport string
	Detail    string
	// State is the job's state as the answer's body reports it through
	// the contract's state path, "" when it reports none.
	State string
}

// CancelAnswered records the answer to cancel request number attempt as
// its own action (R23). The answer never decides the outcome by itself,
// with one exception: a 2xx answer whose body reports a state the
// contract lists as cancelled is the provider's own word that the job
// ended cancelled. Otherwise the operation keeps observing, from one base
// delay on, until the provider reports an end state; a cancel that was not
// sent at all escalates integration_failure, since nothing was cancelled.
func CancelAnswered(op *pollwarden.Operation, c *pollwarden.ContractSpec, attempt int, a CancelAnswer, now time.Time) (*pollwarden.Operation, []pollwarden.Event) {
	next := op.Clone()
	data := pollwarden.EventData{Option: pollwarden.OptionCancel, HTTPStatus: a.Status, Transport: a.Transport, Detail: a.Detail,
		State: a.State, RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests}
	var state pollwarden.CancelState
	switch {
	case !a.Sent:
		state, data.Decision = pollwarden.CancelNotSent, "cancel not sent; nothing was cancelled"
	case a.Status == 0:
		state, data.Decision = pollwarden.CancelUnanswered,
			"cancel sent, no answer: the provider may or may not have received it; it is not sent again"
	case a.Status >= 200 && a.Status < 300:
		state, data.Decision = pollwarden.CancelAnswered, fmt.Sprintf("cancel sent, provider answered %d", a.Status)
	default:
		state, data.Decision = pollwarden.CancelAnswered,
			fmt.Sprintf("cancel sent, provider answered %d; the job's own state still decides the outcome", a.Status)
	}
	if next.Cancel == nil || next.Cancel.Attempts != attempt {
		// A later request replaced this one on the record (an idempotent
		// cancel asked again): the answer is kept in the audit only.
		return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventAction, data)}
	}
	at := now
	next.Cancel.State, next.Cancel.HTTPStatus, next.Cancel.AnsweredAt, next.Cancel.Detail = state, a.Status, &at, a.Detail
	events := []pollwarden.Event{newEvent(next, now, pollwarden.EventAction, data)}
	if next.Phase != pollwarden.PhaseCancelling {
		return next, events
	}
	switch {
	case state == pollwarden.CancelNotSent:
		events = append(events, Escalate(next, c, pollwarden.ReasonIntegrationFailure, "the cancel at the provider was not sent: "+a.Detail, now)...)
	case state == pollwarden.CancelAnswered && a.Status < 300 && classOf(c, a.State) == classCancelled:
		if a.State != next.LastState {
			events = append(events, newEvent(next, now, pollwarden.EventStateChanged, pollwarden.EventData{State: a.State, PrevState: next.LastState}))
		}
		next.LastState, next.Phase, next.FinishedAt = a.State, pollwarden.PhaseCancelled, &at
		events = append(events, newEvent(next, now, pollwarden.EventFinished, pollwarden.EventData{
			State: a.State, Decision: "cancelled: the provider's answer to the cancel reports the job cancelled",
			RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests, Elapsed: elapsed(next, now),
		}))
	default:
		t := now.Add(Floor(c))
		next.NextPollAt, next.NextPollSource, next.NextPollSpread = t, pollwarden.DelayLocalBackoff, false
		events = append(events, newEvent(next, now, pollwarden.EventNextCheckScheduled, pollwarden.EventData{
			NextPollAt: &t, DelaySource: pollwarden.DelayLocalBackoff, RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
			Detail: "observing the job until the provider reports an end state",
		}))
	}
	return next, events
}

// InterruptedCancel handles a cancel found still recorded-but-unanswered
// by a later step: the process that was sending it ended during the call
// (or the call outlived its lease), so nobody knows whether it reached the
// provider. It is sent again (resend) only where the contract documents
// cancel as idempotent; otherwise it is marked interrupted, never resent,
// and the operation goes on observing. ok is false when op has no such
// cancel.
func InterruptedCancel(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (next *pollwarden.Operation, events []pollwarden.Event, resend, ok bool) {
	if op.Phase != pollwarden.PhaseCancelling || op.Cancel == nil || op.Cancel.State != pollwarden.CancelRecorded {
		return op, nil, false, false
	}
	next = op.Clone()
	data := pollwarden.EventData{Option: pollwarden.OptionCancel, RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests}
	if c.Cancel != nil && c.Cancel.Idempotent {
		next.Cancel.Attempts++
		next.Cancel.RequestedAt = now
		data.Decision = fmt.Sprintf("the answer to cancel request %d was never recorded; the contract documents cancel as idempotent, so it is sent again (request %d)",
			op.Cancel.Attempts, next.Cancel.Attempts)
		return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventAction, data)}, true, true
	}
	next.Cancel.State = pollwarden.CancelInterrupted
	next.Cancel.Detail = "the process sending the cancel ended before its answer was recorded"
	data.Decision = "cancel recorded, not known to be sent: the process sending it ended before its answer was recorded; " +
		"the provider may or may not have received it, and it is not sent again"
	return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventAction, data)}, false, true
}

// applyCancelling is a decision on a cancelling operation that is not
// escalated. Neither choice undoes the cancel: an approver's extend adds
// the contract's extension to the observation of the job's end, and
// abandon stops observing (see abandonAfterCancel).
func applyCancelling(op *pollwarden.Operation, c *pollwarden.ContractSpec, p DecisionParams, now time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	next := op.Clone()
	actor := p.Actor
	data := pollwarden.EventData{
		Actor: &actor, Option: p.Option, Detail: p.Note, State: op.LastState,
		Elapsed: elapsed(op, now), RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests,
		FailuresUsed: op.TransportFailuresUsed, RateLimited: op.RateLimitedUsed,
	}
	switch p.Option {
	case pollwarden.OptionExtend:
		if !p.Actor.Role.CanGrant() {
			return nil, nil, pollwarden.Refuse(pollwarden.ErrForbidden, "option", "%q grants new authority; only an approver may choose it (%s is %s)",
				p.Option, p.Actor.Name, p.Actor.Role)
		}
		g := grantFor(op, c)
		dl := extendedDeadline(op, g.Time, now)
		next.DeadlineAt = dl
		next.MaxStatusRequests = pollwarden.AddCount(next.MaxStatusRequests, g.Requests)
		next.ExtensionAsked = nil
		data.DeadlineAt, data.MaxRequests = &dl, next.MaxStatusRequests
		data.Decision = fmt.Sprintf("extended the observation of the cancel to %s with budget %d; the cancel stands",
			dl.UTC().Format(time.RFC3339), next.MaxStatusRequests)
	case pollwarden.OptionAbandon:
		next.MaxStatusRequests = next.StatusRequestsUsed
		data.MaxRequests = next.MaxStatusRequests
		t := now
		next.FinishedAt = &t
		next.Phase, next.Reason = pollwarden.PhaseEscalated, pollwarden.ReasonRequestBudgetExhausted
		next.Escalation = &pollwarden.Escalation{ID: nextEscalationID(next), Reason: next.Reason, At: now}
		abandonAfterCancel(next, c, &data)
		decided(next, decisionRecord(next, pollwarden.OptionAbandon, p.Actor, now, data.Decision))
	default:
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s is cancelling (%s); while the job's end is observed an approver may extend the observation and anyone may abandon it",
			op.ID, CancelSummary(op.Cancel))
	}
	return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventDecision, data)}, nil
}

// abandonAfterCancel closes next, already escalated, after a cancel that
// may have reached the provider: nothing more is sent, and since the job's
// end was not observed the operation stays escalated rather than being
// called failed (or cancelled) on no evidence. Only the console, where
// documented, is left to look at.
func abandonAfterCancel(next *pollwarden.Operation, c *pollwarden.ContractSpec, data *pollwarden.EventData) {
	next.Escalation.Options = options(next, c, next.Reason, askAfterCancel, time.Time{})
	why := fmt.Sprintf("abandoned after a cancel at the provider (%s): nothing more is sent; the job's end was not observed, so the operation stays escalated, not failed",
		CancelSummary(next.Cancel))
	next.Escalation.Message = why
	data.Decision = why
}

// CancelSummary says in a few words where a cancel stands, for messages
// and the story.
func CancelSummary(k *pollwarden.CancelRecord) string {
	if k == nil {
		return "no cancel asked"
	}
	at := k.RequestedAt.UTC().Format("15:04:05 UTC")
	switch k.State {
	case pollwarden.CancelRecorded:
		return fmt.Sprintf("asked by %s at %s, recorded, not yet known to be sent", k.RequestedBy.Name, at)
	case pollwarden.CancelAnswered:
		return fmt.Sprintf("asked by %s at %s, sent, provider answered %d", k.RequestedBy.Name, at, k.HTTPStatus)
	case pollwarden.CancelUnanswered:
		return fmt.Sprintf("asked by %s at %s, sent, no answer", k.RequestedBy.Name, at)
	case pollwarden.CancelInterrupted:
		return fmt.Sprintf("asked by %s at %s, recorded, not known to be sent (the sending process ended)", k.RequestedBy.Name, at)
	case pollwarden.CancelNotSent:
		return fmt.Sprintf("asked by %s at %s, not sent", k.RequestedBy.Name, at)
	}
	return fmt.Sprintf("asked by %s at %s, %s", k.RequestedBy.Name, at, k.State)
}
