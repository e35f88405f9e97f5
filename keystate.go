package pollwarden

import "time"

// KeyState is the one row the store keeps per quota key (QuotaKey): the
// shared quota's state, what the provider taught about the key, who is
// waiting for it, and the key's incident. Every claim under the key reads
// and writes it in the claim's own transaction, so every operation,
// process and replica on the store sees one state. It is plain data:
// policy.KeyGrant and policy.KeyNote decide, the store only keeps it.
type KeyState struct {
	Key string `json:"key"`
	// Requests and Per are the quota the last grant applied (0 when the
	// key has no declared quota): for the views, and so a changed
	// contract is noticed.
	Requests int           `json:"requests,omitempty"`
	Per      time.Duration `json:"per_ns,omitempty"`
	// Next is the earliest time the next request may go (GCRA's
	// theoretical arrival time with no burst): each grant at t sets it to
	// t + Per/Requests, so no window of Per ever holds more than Requests
	// grants, whatever the interleaving of processes.
	Next time.Time `json:"next,omitempty"`
	// WindowStart and WindowUsed count the grants of the current window
	// (it starts at the first grant after the last window ended): the
	// "requests used" that the views show.
	WindowStart time.Time `json:"window_start,omitempty"`
	WindowUsed  int       `json:"window_used,omitempty"`
	// HoldUntil, when after now, holds every request under the key: the
	// provider said it is rate limited (a 429 or rate_limit.when) until
	// then; HoldWhy says which answer taught it.
	HoldUntil time.Time `json:"hold_until,omitempty"`
	HoldWhy   string    `json:"hold_why,omitempty"`
	// Remaining is the provider's last count of requests left (from the
	// contract's remaining_header), -1 when none was read; RemainingAt is
	// when it was read and ResetAt when the provider said its window
	// resets (zero when unknown). Spread is the spacing that count asks
	// for until ResetAt (0 for none).
	Remaining   int           `json:"remaining"`
	RemainingAt time.Time     `json:"remaining_at,omitempty"`
	ResetAt     time.Time     `json:"reset_at,omitempty"`
	Spread      time.Duration `json:"spread_ns,omitempty"`
	// Waiting records, bounded, who is waiting for a slot: one entry per
	// priority and owner, with how many operations wait and until when
	// the entry counts (see KeyWaiter). Priority and fairness are decided
	// from it and from Granted.
	Waiting []KeyWaiter `json:"waiting,omitempty"`
	// Granted counts the grants of the current window per owner, bounded
	// (see policy.KeyGrant): each owner gets an equal share of what is
	// left once priority decided.
	Granted []KeyOwnerCount `json:"granted,omitempty"`
	// Incident is the key's provider incident, if any.
	Incident IncidentState `json:"incident"`
	// UpdatedAt is when the row was last written (the store's clock).
	UpdatedAt time.Time `json:"updated_at,omitempty"`
	// Version increases with every write of the row.
	Version int64 `json:"version"`
}

// NewKeyState is the state of a key never written: nothing granted,
// nothing learned, no remaining count read.
func NewKeyState(key string) *KeyState {
	return &KeyState{Key: key, Remaining: -1}
}

// KeyWaiter is the operations of one priority and owner held back by the
// quota: how many, and until when the entry counts (the latest slot
// promised to one of them, plus a grace): an operation that never comes
// back cannot hold the others off longer than that.
type KeyWaiter struct {
	Priority int       `json:"priority"`
	Owner    string    `json:"owner"`
	Count    int       `json:"count"`
	Until    time.Time `json:"until"`
	// Due is the earliest slot promised to one of them still out: the
	// entry claims a free slot only from then (and briefly), so a slot
	// nobody due asks for is never left unused. Zero in a row written
	// before it was kept: the latest promise (Until less the grace).
	Due time.Time `json:"due,omitzero"`
}

// KeyOwnerCount is one owner's grants in the current window.
type KeyOwnerCount struct {
	Owner string `json:"owner"`
	Count int    `json:"count"`
}

// KeyGrant is the answer to one credentialed request under a key: OK
// when it may go; otherwise it waits until Until, for the reason Source
// (DelaySharedQuota, DelayProviderIncident) that Detail explains.
type KeyGrant struct {
	OK     bool
	Until  time.Time
	Source DelaySource
	Detail string
	// Incident is the open incident that holds the request (Source
	// DelayProviderIncident), or whose probe it is.
	Incident string
}

// KeyEffects is what one answer from the provider changed about its key,
// for the caller to report after the write: a hold learned from a rate
// limit, a spread learned from a remaining count, and the bad values that
// were ignored, with their reasons.
type KeyEffects struct {
	// Held is the time a rate-limit answer holds the key until (zero when
	// it held nothing).
	Held time.Time
	// Ignored lists the provider's values that were bounded or ignored,
	// each with its reason.
	Ignored []string
	// Incident is what the answer did to the key's incidents.
	Incident IncidentEffects
}

// QuotaTake makes a claim take its request from the key's shared quota
// in the claim's own transaction (ClaimParams.Quota).
type QuotaTake struct {
	Key string
	// Grant decides, from the key's row as locked (NewKeyState(Key) when
	// there is none) and the record Change returned, whether the request
	// may go at now (the store's clock, see ClaimParams.Quota): the row to
	// write (nil to leave it) and the answer. Quick and pure, like Change.
	Grant func(ks *KeyState, op *Operation, now time.Time) (*KeyState, KeyGrant)
	// Held returns the record to save when Grant holds the request, from
	// the record as read and the answer (its Until on the caller's clock):
	// the wait recorded, nothing reserved, no lease taken. Nil saves
	// nothing of the operation.
	Held func(op *Operation, g KeyGrant) (*Operation, []Event)
}

// QuotaNote makes a save teach the key's row what the provider's answer
// said (SaveParams.Quota), in the save's own transaction.
type QuotaNote struct {
	Key string
	// Note returns the row to write (nil to leave it) from the row as
	// locked and now (the store's clock); quick and pure.
	Note func(ks *KeyState, now time.Time) *KeyState
}

// Used is the number of requests granted in the key's current window at
// now (0 once the window is over), for the views.
func (ks *KeyState) Used(now time.Time) int {
	if ks.Per <= 0 || ks.WindowStart.IsZero() || !now.Before(ks.WindowStart.Add(ks.Per)) {
		return 0
	}
	return ks.WindowUsed
}

// Waiters is the number of operations waiting for a slot of the key at
// now, as far as the row knows (its live waiting entries).
func (ks *KeyState) Waiters(now time.Time) int {
	n := 0
	for _, w := range ks.Waiting {
		if now.Before(w.Until) {
			n += w.Count
		}
	}
	return n
}
