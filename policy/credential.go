package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// RetryCredentialOffered reports whether op is an open authorization_denied
// question with a refused credential on record: the case where
// retry_credential may be offered, once the credential differs.
func RetryCredentialOffered(op *pollwarden.Operation) bool {
	e := op.Escalation
	return op.Phase.AwaitsDecision() && op.Reason == pollwarden.ReasonAuthorizationDenied &&
		e != nil && e.Decided == nil && op.RefusedCredential != nil
}

// OfferRetryCredential returns op with retry_credential among its options
// when changed (the credential it would send now differs from the refused
// one, as the reader judged it), else op itself. The offer is judged at
// each read and never stored, so it follows the credential as it is now.
func OfferRetryCredential(op *pollwarden.Operation, changed bool) *pollwarden.Operation {
	if !changed || !RetryCredentialOffered(op) {
		return op
	}
	next := op.Clone()
	o := pollwarden.Option{
		ID: pollwarden.OptionRetryCredential,
		Label: fmt.Sprintf("Retry with the changed credential %s: one status request (request %d of %d); another refusal asks again",
			display.Value(op.RefusedCredential.Ref), op.StatusRequestsUsed+1, max(op.MaxStatusRequests, op.StatusRequestsUsed+1)),
		GrantsAuthority: true,
	}
	next.Escalation.Options = append([]pollwarden.Option{o}, next.Escalation.Options...)
	next.Escalation.Message += fmt.Sprintf("\nCredential %s has changed since it was refused:\n  [%s] %s",
		display.Value(op.RefusedCredential.Ref), o.ID, o.Label)
	return next
}

// retryCredential lets one status request go with a credential that
// differs from the refused one (R13, R19: never a retry with the same
// one). The budget gains a request only when none is left, so the retry
// can be sent; the deadline stays. Another 401 or 403 escalates again.
func retryCredential(op *pollwarden.Operation, p DecisionParams, now time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	switch {
	case !RetryCredentialOffered(op):
		if !op.Phase.AwaitsDecision() || op.Escalation == nil {
			return nil, nil, notAwaiting(op)
		}
		return nil, nil, pollwarden.Refuse(pollwarden.ErrPhase, "", "retry_credential is offered only after authorization_denied with a refused credential on record; operation %s is %s %s",
			op.ID, op.Phase, op.Reason)
	case !p.Actor.Role.CanGrant():
		return nil, nil, pollwarden.Refuse(pollwarden.ErrForbidden, "option", "%q grants new authority; only an approver may choose it (%s is %s)",
			pollwarden.OptionRetryCredential, p.Actor.Name, p.Actor.Role)
	case !p.CredentialChanged:
		return nil, nil, pollwarden.Refuse(pollwarden.ErrPhase, "", "credential %s is the one the provider refused (or cannot be read here); change it first: a refused credential is never retried",
			display.Value(op.RefusedCredential.Ref))
	}
	next := op.Clone()
	actor := p.Actor
	if next.MaxStatusRequests <= next.StatusRequestsUsed {
		next.MaxStatusRequests = next.StatusRequestsUsed + 1
	}
	what := fmt.Sprintf("one status request with the changed credential %s (request %d of %d)",
		op.RefusedCredential.Ref, next.StatusRequestsUsed+1, next.MaxStatusRequests)
	data := pollwarden.EventData{
		Actor: &actor, Option: pollwarden.OptionRetryCredential, Detail: p.Note, State: op.LastState, Reason: op.Reason,
		Elapsed: elapsed(op, now), RequestsUsed: op.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		FailuresUsed: op.TransportFailuresUsed, RateLimited: op.RateLimitedUsed, Decision: what,
	}
	rec := decisionRecord(op, pollwarden.OptionRetryCredential, actor, now, what)
	extra := reopen(next, now, pollwarden.DelayManualExtension)
	decided(next, rec)
	ev := newEvent(next, now, pollwarden.EventDecision, data)
	return next, append([]pollwarden.Event{ev}, extra...), nil
}
