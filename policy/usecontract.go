package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// UseContractLabel is the label of the use_current_contract option: what
// differs between the contract op runs under and c, the loaded contract of
// its name, in CompareContract's words.
func UseContractLabel(ch ContractChange) string {
	return fmt.Sprintf("Go on under the contract loaded now (%s; contract %s → %s); the counters are kept", strings.Join(ch.Changes, ", "), ch.From, ch.To)
}

// UseContractOption is the use_current_contract option for op when c, the
// loaded contract of its name, differs from the one op runs under; nil
// when it does not differ or op is not escalated.
func UseContractOption(op *pollwarden.Operation, c *pollwarden.ContractSpec) *pollwarden.Option {
	if op.Phase != pollwarden.PhaseEscalated || op.Contract != c.Name {
		return nil
	}
	ch := CompareContract(op, c)
	if !ch.Changed() {
		return nil
	}
	return &pollwarden.Option{ID: pollwarden.OptionUseCurrentContract, Label: UseContractLabel(ch), GrantsAuthority: true}
}

// UseContract moves op onto c, the loaded contract of its name, at an
// approver's word (R20): the new contract may accept other answers or send
// elsewhere, so it is authority granted, never taken up on its own. The
// operation's limits are kept, lowered where c's are lower (never below
// what is used); raising them is an extension's. An escalated operation
// goes back to waiting, due now; a waiting one goes on. The caller records
// c's stored fingerprint on the returned record.
func UseContract(op *pollwarden.Operation, c *pollwarden.ContractSpec, p DecisionParams, now time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	if !p.Actor.Role.CanGrant() {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrForbidden, "option", "%q grants new authority; only an approver may choose it (%s is %s)",
			pollwarden.OptionUseCurrentContract, p.Actor.Name, p.Actor.Role)
	}
	if op.Contract != c.Name {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s belongs to contract %q, not %q", op.ID, op.Contract, c.Name)
	}
	if op.Phase != pollwarden.PhaseWaiting && op.Phase != pollwarden.PhaseEscalated {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s is %s: only a waiting or escalated operation can move to another contract", op.ID, op.Phase)
	}
	ch := CompareContract(op, c)
	if !ch.Changed() {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "the contract %s loaded now is the one operation %s runs under: there is nothing to take up", c.Name, op.ID)
	}
	next := op.Clone()
	next.MaxStatusRequests = max(min(next.MaxStatusRequests, c.Limits.MaxStatusRequests), next.StatusRequestsUsed)
	next.MaxTransportFailures = max(min(next.MaxTransportFailures, c.Limits.MaxTransportFailures), next.TransportFailuresUsed)
	next.MaxRateLimited = max(min(next.MaxRateLimited, c.Limits.MaxRateLimited), next.RateLimitedUsed)
	if dl := next.StartedAt.Add(c.Limits.Deadline); dl.Before(next.DeadlineAt) {
		next.DeadlineAt = dl
	}
	next.ContractDigest = ContractDigest(c)
	next.ContractLimits = KeptLimits(c)
	actor := p.Actor
	data := pollwarden.EventData{
		Actor: &actor, Option: pollwarden.OptionUseCurrentContract, Detail: p.Note, State: op.LastState, Reason: op.Reason,
		Elapsed: elapsed(op, now), RequestsUsed: op.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		FailuresUsed: op.TransportFailuresUsed, RateLimited: op.RateLimitedUsed,
		Decision: fmt.Sprintf("now runs under the contract loaded now: %s (contract %s → %s)", strings.Join(ch.Changes, ", "), ch.From, ch.To),
	}
	var extra []pollwarden.Event
	if op.Phase == pollwarden.PhaseEscalated {
		extra = reopen(next, now, pollwarden.DelayManualExtension)
	}
	ev := newEvent(next, now, pollwarden.EventDecision, data)
	return next, append([]pollwarden.Event{ev}, extra...), nil
}
