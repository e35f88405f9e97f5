package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// DecisionParams is a person's answer to an escalation.
type DecisionParams struct {
	Option string
	Actor  pollwarden.Actor
	Note   string
	// Escalation, when set, is the id of the question answered: the
	// decision is refused unless it is still the open one.
	Escalation string
	// CredentialChanged says that the credential the operation would send
	// now differs from the refused one (judged by the caller, who may
	// read it); only then is retry_credential accepted.
	CredentialChanged bool
}

// Apply records a decision on an escalated operation (R20). Options that
// grant authority are refused unless the actor is an approver. An extension
// sets a new deadline and adds to the budgets, saturating at
// pollwarden.MaxCount (never wrapping); it never resets a counter.
// A cancel is RequestCancel's (the call itself is a separate action with
// its own record, R23); a cancelling operation takes only extend and
// abandon, neither of which undoes the cancel.
func Apply(op *pollwarden.Operation, c *pollwarden.ContractSpec, p DecisionParams, now time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	if err := CheckQuestion(op, p.Escalation); err != nil {
		return nil, nil, err
	}
	switch {
	case p.Option == pollwarden.OptionRetryCredential:
		return retryCredential(op, p, now)
	case p.Option == pollwarden.OptionCancel:
		next, events, err := RequestCancel(op, c, p, now, now)
		if next == nil && err == nil {
			next = op.Clone()
		}
		return next, events, err
	case op.Phase == pollwarden.PhaseCancelling:
		return applyCancelling(op, c, p, now)
	case op.Phase == pollwarden.PhaseWaiting && p.Option == pollwarden.OptionAbandon:
		next, ev := abandonWaiting(op, p, now)
		return next, []pollwarden.Event{ev}, nil
	}
	if !op.Phase.AwaitsDecision() || op.Escalation == nil {
		return nil, nil, notAwaiting(op)
	}
	var opt *pollwarden.Option
	var ids []string
	for i := range op.Escalation.Options {
		o := &op.Escalation.Options[i]
		ids = append(ids, o.ID)
		if o.ID == p.Option {
			opt = o
		}
	}
	if opt == nil {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "option", "option %q is not offered; choose one of %s", p.Option, strings.Join(ids, ", "))
	}
	if opt.GrantsAuthority && !p.Actor.Role.CanGrant() {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrForbidden, "option", "%q grants new authority; only an approver may choose it (%s is %s)",
			opt.ID, p.Actor.Name, p.Actor.Role)
	}
	next := op.Clone()
	actor := p.Actor
	data := pollwarden.EventData{
		Actor: &actor, Option: opt.ID, Detail: p.Note, State: op.LastState, Reason: op.Reason,
		Elapsed: elapsed(op, now), RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests,
		FailuresUsed: op.TransportFailuresUsed, RateLimited: op.RateLimitedUsed,
	}
	var extra []pollwarden.Event
	switch opt.ID {
	case pollwarden.OptionExtend:
		g := grantFor(op, c)
		dl := extendedDeadline(op, g.Time, now)
		next.DeadlineAt = dl
		next.MaxStatusRequests = pollwarden.AddCount(op.MaxStatusRequests, g.Requests)
		next.ExtensionAsked = nil
		switch op.Reason {
		case pollwarden.ReasonRateLimited:
			next.MaxRateLimited = pollwarden.AddCount(op.MaxRateLimited, 1)
		case pollwarden.ReasonProviderFailure:
			next.MaxTransportFailures = pollwarden.AddCount(op.MaxTransportFailures, 1)
		}
		extra = reopen(next, now, pollwarden.DelayManualExtension)
		data.DeadlineAt, data.MaxRequests = &dl, next.MaxStatusRequests
		data.Decision = fmt.Sprintf("extended to %s with budget %d", dl.UTC().Format(time.RFC3339), next.MaxStatusRequests)
		if op.Cancel.InForce() {
			data.Decision += "; the cancel stands: observing the job's end"
		}
	case pollwarden.OptionApproveCall:
		next.ApprovedCalls++
		extra = reopen(next, now, pollwarden.DelayManualExtension)
		data.Decision = "one status call approved"
	case pollwarden.OptionAbandon:
		if op.Cancel.InForce() {
			abandonAfterCancel(next, c, &data)
			break
		}
		next.Phase = pollwarden.PhaseFailed
		next.Escalation.Options = nil
		data.Decision = "abandoned: closed as failed"
	case pollwarden.OptionInspect:
		data.Decision = "console inspection noted; the operation stays escalated"
	case pollwarden.OptionResubmit:
		data.Decision = resubmit(next)
	}
	decided(next, decisionRecord(op, opt.ID, actor, now, data.Decision))
	ev := newEvent(next, now, pollwarden.EventDecision, data)
	return next, append([]pollwarden.Event{ev}, extra...), nil
}

// notAwaiting says why op takes no decision: who answered its last
// question, when there was one.
func notAwaiting(op *pollwarden.Operation) error {
	if d := op.LastDecision; d != nil {
		return pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s is %s, not awaiting a decision; already decided: %s", op.ID, op.Phase, DecisionText(d))
	}
	return pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s is %s, not awaiting a decision", op.ID, op.Phase)
}

// abandonWaiting stops watching a waiting operation at its owner's or an
// approver's word. It narrows authority, so it needs no escalation first
// and no approver: the operation closes failed, with an escalation record
// that says who stopped it and that nothing was sent to the provider (a
// provider's own failure never carries one).
func abandonWaiting(op *pollwarden.Operation, p DecisionParams, now time.Time) (*pollwarden.Operation, pollwarden.Event) {
	next := op.Clone()
	actor := p.Actor
	next.Phase, next.FinishedAt = pollwarden.PhaseFailed, &now
	next.Escalation = &pollwarden.Escalation{ID: nextEscalationID(next), At: now, Options: nil}
	rec := decisionRecord(op, pollwarden.OptionAbandon, actor, now,
		"abandoned while waiting: pollwarden stopped watching; nothing was cancelled at the provider")
	decided(next, rec)
	next.Escalation.Decided.Escalation, next.LastDecision.Escalation = next.Escalation.ID, next.Escalation.ID
	ev := newEvent(next, now, pollwarden.EventDecision, pollwarden.EventData{
		Actor: &actor, Option: pollwarden.OptionAbandon, Detail: p.Note, State: op.LastState,
		Elapsed: elapsed(op, now), RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests,
		FailuresUsed: op.TransportFailuresUsed, RateLimited: op.RateLimitedUsed,
		Decision: "abandoned while waiting: closed as failed; nothing cancelled at the provider",
	})
	return next, ev
}

// reopen returns an escalated record to waiting with the next poll due
// now; to cancelling when a cancel may have reached the provider, whose
// answer then still decides.
func reopen(op *pollwarden.Operation, now time.Time, src pollwarden.DelaySource) []pollwarden.Event {
	op.Phase, op.Reason, op.Escalation, op.FinishedAt = pollwarden.PhaseWaiting, "", nil, nil
	if op.Cancel.InForce() {
		op.Phase = pollwarden.PhaseCancelling
	}
	op.NextPollAt, op.NextPollSource, op.NextPollSpread = now, src, false
	t := now
	return []pollwarden.Event{newEvent(op, now, pollwarden.EventNextCheckScheduled, pollwarden.EventData{
		NextPollAt: &t, DelaySource: src, RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests,
	})}
}

// RequestExtension records an agent's request for more time or requests
// and keeps it on op (which it changes) as the pending request the extend
// option offers; an escalation already awaiting a decision is offered it
// at once (c, the contract op runs under, may be nil: the option is then
// left as it is). It grants nothing (R20): only an approver's decision
// changes limits.
func RequestExtension(op *pollwarden.Operation, c *pollwarden.ContractSpec, actor pollwarden.Actor, extraTime time.Duration, extraRequests int, justification string, now time.Time) []pollwarden.Event {
	a := actor
	op.ExtensionAsked = &pollwarden.ExtensionAsk{ExtraTime: extraTime, ExtraStatusRequests: extraRequests, By: actor.Name, At: now}
	reofferExtension(op, c, now)
	return []pollwarden.Event{newEvent(op, now, pollwarden.EventExtensionRequested, pollwarden.EventData{
		Actor: &a, Detail: fmt.Sprintf("asks for %s and %d more status requests: %s", extraTime, extraRequests, justification),
		RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests, Elapsed: elapsed(op, now),
	})}
}
