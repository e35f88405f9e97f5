package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// EscalateWithoutContract escalates op, due while its contract is no
// longer loaded (removed or renamed on a reload), so that it cannot wait
// for ever: deadline_exceeded when the deadline has passed (what the
// contract's checks would have said first), else integration_failure.
// Either way the detail names the missing contract and nothing was sent.
// The options cannot state an extension's cost without the contract:
// extend is offered for when the contract is loaded again (a decision
// needs it anyway, and it then sets the new limits), abandon always.
func EscalateWithoutContract(op *pollwarden.Operation, now time.Time) []pollwarden.Event {
	return escalateUnpolled(op, now, fmt.Sprintf("contract %q is not in the daemon's contract set (removed or renamed on reload)", op.Contract))
}

// EscalateChangedContract escalates op, due while the daemon's contract
// of its name differs from the one it was created under in a way that
// could widen it (ch, not adoptable): it is not polled under a file it
// was not created under. A decision needs the contract it was created
// under, so extend waits for that file to be loaded again.
func EscalateChangedContract(op *pollwarden.Operation, ch ContractChange, now time.Time) []pollwarden.Event {
	return escalateUnpolled(op, now, fmt.Sprintf("contract %q was edited since the operation was created (%s) and is not polled under the new file",
		op.Contract, strings.Join(ch.Changes, ", ")))
}

// escalateUnpolled escalates op, which cannot be polled for why.
func escalateUnpolled(op *pollwarden.Operation, now time.Time, why string) []pollwarden.Event {
	r := pollwarden.ReasonIntegrationFailure
	detail := why + "; nothing was sent"
	if !now.Before(op.DeadlineAt) {
		r = pollwarden.ReasonDeadlineExceeded
		detail = "the deadline arrived before the next status request, and " + why + "; nothing was sent"
	}
	op.Phase = pollwarden.PhaseEscalated
	op.Reason = r
	t := now
	op.FinishedAt = &t
	opts := []pollwarden.Option{{
		ID: pollwarden.OptionExtend,
		Label: fmt.Sprintf("Load contract %q again, then extend waiting once by its extension (it sets the new deadline and budget)",
			op.Contract),
		GrantsAuthority: true,
	}, {
		ID:    pollwarden.OptionAbandon,
		Label: "Stop waiting and close the operation as failed; nothing more is sent",
	}}
	op.Escalation = &pollwarden.Escalation{ID: nextEscalationID(op), Reason: r, Message: message(op, r, detail, opts, now), Options: opts, At: now}
	return []pollwarden.Event{newEvent(op, now, pollwarden.EventEscalated, pollwarden.EventData{
		State:        op.LastState,
		Reason:       r,
		Detail:       detail,
		RequestsUsed: op.StatusRequestsUsed,
		MaxRequests:  op.MaxStatusRequests,
		Elapsed:      elapsed(op, now),
		Options:      opts,
	})}
}
