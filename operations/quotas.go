package operations

import (
	"context"
	"slices"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// QuotaView is one quota key as a person (GET /v1/quotas, /ui/quotas,
// pollwarden quotas) or a scrape (/metrics) sees it: what the quota
// allows, what was taken of it in the current window, what the provider
// last said, and who waits on it. The key is a secret's reference
// ("env:GITHUB_TOKEN") or a contract's name, never a secret.
type QuotaView struct {
	Key string `json:"key"`
	// Limit and Per are the declared quota (0 and "" when the key's
	// contracts declare none: only what the provider teaches holds it).
	Limit int    `json:"limit"`
	Per   string `json:"per,omitempty"`
	// Used is the requests granted in the current window of Per, from
	// WindowStart; 0 once that window ended.
	Used        int        `json:"requests_used"`
	WindowStart *time.Time `json:"window_start,omitempty"`
	// Remaining is the provider's last count of requests left (its
	// remaining header), with when it was read and when the provider
	// said its window resets; nil when none was read.
	Remaining   *int       `json:"provider_remaining"`
	RemainingAt *time.Time `json:"provider_remaining_at,omitempty"`
	ResetAt     *time.Time `json:"provider_reset_at,omitempty"`
	// HeldUntil, while in the future, holds every request under the key
	// (a rate-limit answer taught it); HeldBecause says which.
	HeldUntil   *time.Time `json:"held_until,omitempty"`
	HeldBecause string     `json:"held_because,omitempty"`
	// Waiting counts the operations whose next request waits for this
	// key (delay source shared_quota or provider_incident), and
	// WaitingOperations lists the first MaxQuotaWaiters of them, most
	// urgent and earliest first.
	Waiting           int             `json:"waiting"`
	WaitingOperations []QuotaWaiter   `json:"waiting_operations"`
	WaitingByOwner    []QuotaOwnerSum `json:"waiting_by_priority_and_owner"`
}

// QuotaWaiter is one operation held by its key's quota.
type QuotaWaiter struct {
	OperationID string                 `json:"operation_id"`
	Contract    string                 `json:"contract"`
	Owner       string                 `json:"owner,omitempty"`
	Priority    int                    `json:"priority"`
	NextPollAt  time.Time              `json:"next_poll_at"`
	Source      pollwarden.DelaySource `json:"next_poll_source"`
}

// QuotaOwnerSum is how many operations of one priority and owner the
// key's row counts as waiting for a slot (what priority and fairness
// decide from).
type QuotaOwnerSum struct {
	Priority int    `json:"priority"`
	Owner    string `json:"owner"`
	Count    int    `json:"count"`
}

// MaxQuotaWaiters bounds the operations listed per key: the count says
// how many wait, the list names the first ones.
const MaxQuotaWaiters = 50

// maxQuotaScan bounds the waiting operations one read looks through to
// find those held by a quota: a fleet's whole table is never read for a
// view.
const maxQuotaScan = 5000

// Quotas reads every quota key the store holds a row for, with the
// operations waiting on each, for an approver (ActionQuotas): what the
// key's quota is and who waits on it says what every owner's operations
// are doing. Keys come sorted.
func (s *Reader) Quotas(ctx context.Context, c Caller, now time.Time) ([]QuotaView, error) {
	if err := c.May(ActionQuotas, nil, ""); err != nil {
		return nil, err
	}
	rows, err := s.store.KeyList(ctx)
	if err != nil {
		return nil, err
	}
	views := make([]QuotaView, 0, len(rows))
	byKey := map[string]int{}
	for _, ks := range rows {
		byKey[ks.Key] = len(views)
		views = append(views, quotaView(ks, now))
	}
	waiting, err := s.store.OperationList(ctx, pollwarden.ListParams{Phase: pollwarden.PhaseWaiting, Limit: maxQuotaScan})
	if err != nil {
		return nil, err
	}
	keys := quotaKeys{kept: contract.NewKept(s.store), byFP: map[string]string{}}
	for _, op := range waiting {
		if op.NextPollSource != pollwarden.DelaySharedQuota && op.NextPollSource != pollwarden.DelayProviderIncident {
			continue
		}
		key := keys.of(ctx, op)
		i, ok := byKey[key]
		if !ok {
			byKey[key] = len(views)
			i = len(views)
			views = append(views, QuotaView{Key: key, WaitingOperations: []QuotaWaiter{}, WaitingByOwner: []QuotaOwnerSum{}})
		}
		v := &views[i]
		v.Waiting++
		v.WaitingOperations = append(v.WaitingOperations, QuotaWaiter{OperationID: op.ID, Contract: op.Contract, Owner: op.Owner,
			Priority: op.EffectivePriority(), NextPollAt: op.NextPollAt, Source: op.NextPollSource})
	}
	for i := range views {
		w := views[i].WaitingOperations
		slices.SortFunc(w, func(a, b QuotaWaiter) int {
			if a.Priority != b.Priority {
				return a.Priority - b.Priority
			}
			return a.NextPollAt.Compare(b.NextPollAt)
		})
		views[i].WaitingOperations = w[:min(len(w), MaxQuotaWaiters)]
	}
	slices.SortFunc(views, func(a, b QuotaView) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return views, nil
}

// quotaView is a key's row as the views show it at now.
func quotaView(ks pollwarden.KeyState, now time.Time) QuotaView {
	v := QuotaView{Key: ks.Key, Limit: ks.Requests, WaitingOperations: []QuotaWaiter{}, WaitingByOwner: []QuotaOwnerSum{}}
	if ks.Per > 0 {
		v.Per = pollwarden.ShortDuration(ks.Per)
	}
	// The row's own reading of its window, as the grants count it.
	if v.Used = ks.Used(now); v.Used > 0 {
		v.WindowStart = timePtr(ks.WindowStart)
	}
	if ks.Remaining >= 0 {
		r := ks.Remaining
		v.Remaining = &r
		v.RemainingAt = timePtr(ks.RemainingAt)
		v.ResetAt = timePtr(ks.ResetAt)
	}
	if ks.HoldUntil.After(now) {
		v.HeldUntil = timePtr(ks.HoldUntil)
		v.HeldBecause = ks.HoldWhy
	}
	for _, w := range ks.Waiting {
		if w.Until.After(now) {
			v.WaitingByOwner = append(v.WaitingByOwner, QuotaOwnerSum{Priority: w.Priority, Owner: w.Owner, Count: w.Count})
		}
	}
	return v
}

// timePtr is t's address, nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// quotaKeys finds the quota key of each operation from the contract it
// runs under, as its store keeps it, once per contract.
type quotaKeys struct {
	kept *contract.Kept
	byFP map[string]string
}

func (k quotaKeys) of(ctx context.Context, op *pollwarden.Operation) string {
	if key, ok := k.byFP[op.ContractFingerprint]; ok && op.ContractFingerprint != "" {
		return key
	}
	key := op.Contract
	if op.CredentialName != "" {
		key = op.CredentialName
	}
	if ex, ok, err := k.kept.Of(ctx, op); err == nil && ok {
		key = pollwarden.QuotaKey(ex.Spec())
	}
	k.byFP[op.ContractFingerprint] = key
	return key
}
