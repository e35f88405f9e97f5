package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// quotaHeld is a claim's request that its key held back: the key's
// answer (Until on the caller's clock) and the events of the wait.
type quotaHeld struct {
	grant  pollwarden.KeyGrant
	events []pollwarden.Event
}

// quotaTake is the take of one credentialed request from ct's key in a
// claim's write (pollwarden.ClaimParams.Quota). *held is set when the key
// holds the request; wait says whether the claim then records the wait
// (a status request: the operation's next poll moves to when a slot
// frees, delay source shared_quota) or writes nothing (a submission or a
// cancel, which the caller sends once the slot is free).
func quotaTake(ct *pollwarden.ContractSpec, now time.Time, wait bool, held **quotaHeld) *pollwarden.QuotaTake {
	*held = nil
	return &pollwarden.QuotaTake{
		Key: pollwarden.QuotaKey(ct),
		Grant: func(ks *pollwarden.KeyState, op *pollwarden.Operation, at time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
			*held = nil // a retried transaction decides again
			if !wait {
				// Not a status request: it never takes an
				// incident's probe slot.
				return policy.ActionGrant(ks, op, ct, at)
			}
			return policy.KeyGrant(ks, op, ct, at)
		},
		Held: func(op *pollwarden.Operation, g pollwarden.KeyGrant) (*pollwarden.Operation, []pollwarden.Event) {
			h := &quotaHeld{grant: g}
			*held = h
			if !wait {
				return nil, nil
			}
			var next *pollwarden.Operation
			next, h.events = quotaWait(op, g, now)
			return next, h.events
		},
	}
}

// quotaWait records a status request held back by its key: nothing is
// counted against the operation's budgets; its next poll is when the key
// frees a slot for it, never past the deadline (which then escalates as
// always), and the story says what it waits for and how long.
func quotaWait(op *pollwarden.Operation, g pollwarden.KeyGrant, now time.Time) (*pollwarden.Operation, []pollwarden.Event) {
	next := op.Clone()
	until := g.Until
	if until.After(next.DeadlineAt) {
		until = next.DeadlineAt
	}
	next.NextPollAt, next.NextPollSource, next.NextPollSpread = until, g.Source, false
	// The incident's decision applies to the operations it holds.
	next.HeldBy = ""
	if g.Source == pollwarden.DelayProviderIncident {
		next.HeldBy = g.Incident
	}
	at := until
	ev := pollwarden.Event{OperationID: op.ID, At: now, Kind: pollwarden.EventNextCheckScheduled, Data: pollwarden.EventData{
		NextPollAt: &at, DelaySource: g.Source,
		RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		Detail: fmt.Sprintf("held %s: %s; nothing sent, no budget spent", until.Sub(now).Round(time.Millisecond), g.Detail),
	}}
	return next, []pollwarden.Event{ev}
}

// quotaNote is the lesson of one answer for ct's key, written with the
// answer's record (pollwarden.SaveParams.Quota); nil when the answer can
// teach nothing, so the save does not read the key's row.
func quotaNote(ct *pollwarden.ContractSpec, op *pollwarden.Operation, obs *pollwarden.Observation) *pollwarden.QuotaNote {
	if !policy.KeyTaught(ct, *obs) {
		return nil
	}
	o := *obs
	return &pollwarden.QuotaNote{Key: pollwarden.QuotaKey(ct), Note: func(ks *pollwarden.KeyState, now time.Time) *pollwarden.KeyState {
		next, _ := policy.KeyNote(ks, op, ct, o, now)
		return next
	}}
}

// quotaRejections are the answer's quota values that were bounded or
// ignored, as events of the answer (hint_rejected), so the story tells
// them.
func quotaRejections(op *pollwarden.Operation, ct *pollwarden.ContractSpec, obs *pollwarden.Observation, now time.Time) []pollwarden.Event {
	var evs []pollwarden.Event
	for _, why := range policy.KeyFacts(ct, *obs).Ignored {
		evs = append(evs, pollwarden.Event{OperationID: op.ID, At: now, Kind: pollwarden.EventHintRejected,
			Data: pollwarden.EventData{Hint: why}})
	}
	return evs
}

// MaxQuotaWait is how long a cancel or a result fetch, asked for by a
// person or an agent who is waiting for the answer, waits for its key to
// free a slot; a longer hold answers pollwarden.ErrQuotaHeld instead, with
// nothing sent or recorded.
const MaxQuotaWait = 30 * time.Second

// waitQuota waits, on the controller's clock, for the slot a held
// request was told of, or refuses with ErrQuotaHeld when it is further
// than MaxQuotaWait. A request a provider incident holds is refused at
// once (ErrIncidentHeld, naming the incident): the incident has no known
// end to wait for. what names the request ("the cancel").
func (c *Controller) waitQuota(ctx context.Context, h *quotaHeld, what, key string) error {
	if h.grant.Source == pollwarden.DelayProviderIncident {
		return pollwarden.Refuse(pollwarden.ErrIncidentHeld, "",
			"%s is held by provider incident %s (%s); nothing was sent or recorded; ask again once it closes",
			what, h.grant.Incident, h.grant.Detail)
	}
	what += " is held by the shared quota of " + key
	now := c.clock.Now()
	d := h.grant.Until.Sub(now)
	if d > MaxQuotaWait {
		return fmt.Errorf("%w: %s until %s (%s); nothing was sent or recorded; ask again then",
			pollwarden.ErrQuotaHeld, what, h.grant.Until.UTC().Format(time.RFC3339), h.grant.Detail)
	}
	return c.clock.Sleep(ctx, max(d, 0))
}
