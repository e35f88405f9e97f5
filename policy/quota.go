package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The bounds of a key's row: it is read and written by every claim under
// the key, so it stays small whatever the number of operations.
const (
	// MaxKeyWaiters bounds KeyState.Waiting (priority × owner entries).
	MaxKeyWaiters = 64
	// MaxKeyOwners bounds KeyState.Granted (owners counted this window).
	MaxKeyOwners = 64
	// WaiterGrace is how long after the slot promised to a held operation
	// its waiting entry still counts: an operation that never comes back
	// (cancelled, its process gone) holds the less urgent ones off no
	// longer than this.
	WaiterGrace = time.Minute
	// NoQuotaGap spaces the operations held under a key with no declared
	// quota (a learned hold only), so they resume one after another
	// rather than all at the reset.
	NoQuotaGap = 100 * time.Millisecond
	// maxAhead bounds the count of waiters a hold is placed behind, so
	// gap × ahead cannot overflow.
	maxAhead = 1 << 20
)

// KeyGrant decides whether one credentialed request of op under contract
// c may go at now, from its key's row ks (pollwarden.NewKeyState for a
// key never written): it returns the row to write (nil when nothing
// changed) and the answer. The store runs it inside the claim's
// transaction with the row locked, so every process and replica decides
// on one state. A check placed in front (an incident's one probe at a
// time) only has to return its held answer before this one runs.
//
// The quota is GCRA without burst: a grant at t sets Next to t + Per /
// Requests (rounded up), and nothing is granted before Next, so no window
// of Per holds more than Requests grants, whatever the interleaving. A
// learned hold (HoldUntil) or a provider's remaining count (spread until
// its reset) only ever make the spacing longer. When a slot is free, it
// goes to the most deserving waiter (see ahead): a less urgent request is
// held while one more urgent waits for it.
func KeyGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.Contract, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	return keyGrant(ks, op, c, now, true)
}

// ActionGrant is KeyGrant for a credentialed request that is not a status
// request (a submission, a cancel, a result fetch): under an open outage
// it holds and never takes the probe's slot, since its answer cannot tell
// whether the provider is back and so would not free the slot; once an
// incident is over it goes to the quota at once (the resume spread is for
// the held operations' status requests).
func ActionGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.Contract, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	return keyGrant(ks, op, c, now, false)
}

func keyGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.Contract, now time.Time, status bool) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	if ks.Incident.Open != nil || (status && op.NextPollSource == pollwarden.DelayProviderIncident) {
		return keyIncident(ks, op, c, now, status)
	}
	next := cloneKey(ks)
	prio, owner := op.EffectivePriority(), op.Owner
	changed := rollWindow(next, now, c)
	if op.NextPollSource == pollwarden.DelaySharedQuota {
		// It was waiting for this: it is no longer one of the waiters.
		changed = unwait(next, prio, owner) || changed
	}
	changed = expireWaiters(next, now) || changed
	gap := keyInterval(next, c, now)
	free := keyFree(next, now)
	if !now.Before(free) && (gap == 0 || ahead(next, prio, owner, now, false) == 0) {
		if gap > 0 || declared(c) {
			grant(next, now, gap, owner)
			changed = true
		}
		if !changed {
			return nil, pollwarden.KeyGrant{OK: true}
		}
		next.UpdatedAt = now
		return next, pollwarden.KeyGrant{OK: true}
	}
	if gap == 0 {
		gap = NoQuotaGap
	}
	n := ahead(next, prio, owner, now, true)
	until := maxTime(free, now).Add(gap * time.Duration(n))
	wait(next, prio, owner, until.Add(WaiterGrace))
	next.UpdatedAt = now
	return next, pollwarden.KeyGrant{Until: until, Source: pollwarden.DelaySharedQuota, Detail: heldDetail(next, c, now, free, n)}
}

// heldDetail says why a request waits: the provider's hold, or the
// shared quota's spacing, and behind how many waiters.
func heldDetail(ks *pollwarden.KeyState, c *pollwarden.Contract, now, free time.Time, n int) string {
	var why string
	switch {
	case now.Before(ks.HoldUntil) && !ks.HoldUntil.Before(free):
		why = fmt.Sprintf("the provider holds %s until %s (%s)", ks.Key, ks.HoldUntil.UTC().Format(time.RFC3339), ks.HoldWhy)
	case declared(c):
		why = fmt.Sprintf("the shared quota of %s allows %d requests per %s", ks.Key, c.Quota.Requests, c.Quota.Per)
	default:
		why = fmt.Sprintf("the provider's count for %s asks for spacing", ks.Key)
	}
	if n > 0 {
		why += fmt.Sprintf("; %d waiting ahead", n)
	}
	return why
}

// keyInterval is the spacing of grants under the key: the declared
// quota's Per/Requests (rounded up, so Requests intervals never fall
// short of Per), or the provider's remaining count spread until its
// reset when that is longer; 0 when neither limits.
func keyInterval(ks *pollwarden.KeyState, c *pollwarden.Contract, now time.Time) time.Duration {
	var gap time.Duration
	if q := c.Quota; q != nil && q.Requests > 0 && q.Per > 0 {
		gap = (q.Per + time.Duration(q.Requests) - 1) / time.Duration(q.Requests)
	}
	if ks.Remaining > 0 && now.Before(ks.ResetAt) {
		left := ks.ResetAt.Sub(now)
		spread := (left + time.Duration(ks.Remaining) - 1) / time.Duration(ks.Remaining)
		gap = max(gap, spread)
	}
	return gap
}

// keyFree is the earliest time a request may go under the key: after
// the quota's next slot, the provider's hold, and the reset when the
// provider said nothing remains.
func keyFree(ks *pollwarden.KeyState, now time.Time) time.Time {
	free := maxTime(ks.Next, ks.HoldUntil)
	if ks.Remaining == 0 && now.Before(ks.ResetAt) {
		free = maxTime(free, ks.ResetAt)
	}
	return free
}

// ahead counts the operations waiting that deserve the next slot more
// than one of priority prio and owner owner: every waiter of a more
// urgent priority, then, at the same priority, those of owners granted
// fewer requests this window (an equal share each). With equal, it also
// counts those as deserving as it (for a place in line), its own
// included.
func ahead(ks *pollwarden.KeyState, prio int, owner string, now time.Time, equal bool) int {
	mine := granted(ks, owner)
	n := 0
	for _, w := range ks.Waiting {
		if !now.Before(w.Until) || w.Count <= 0 {
			continue
		}
		theirs := granted(ks, w.Owner)
		switch {
		case w.Priority < prio,
			w.Priority == prio && w.Owner != owner && theirs < mine,
			equal && w.Priority == prio && (w.Owner == owner || theirs == mine):
			n += w.Count
		}
		if n >= maxAhead {
			return maxAhead
		}
	}
	return n
}

// grant takes one slot at now for owner: the next slot is gap later, and
// the window's counts (all, and the owner's) grow by one.
func grant(ks *pollwarden.KeyState, now time.Time, gap time.Duration, owner string) {
	if gap > 0 {
		ks.Next = now.Add(gap)
	}
	ks.WindowUsed++
	if ks.Remaining > 0 && now.Before(ks.ResetAt) {
		ks.Remaining--
	}
	for i := range ks.Granted {
		if ks.Granted[i].Owner == owner {
			ks.Granted[i].Count++
			return
		}
	}
	if len(ks.Granted) >= MaxKeyOwners {
		// The least served owner's count goes: it only ever makes that
		// owner look more deserving, never starves anyone.
		low := 0
		for i, g := range ks.Granted {
			if g.Count < ks.Granted[low].Count {
				low = i
			}
		}
		ks.Granted = append(ks.Granted[:low], ks.Granted[low+1:]...)
	}
	ks.Granted = append(ks.Granted, pollwarden.KeyOwnerCount{Owner: owner, Count: 1})
}

// cloneKey copies a row so a decision never changes the one it was given.
func cloneKey(ks *pollwarden.KeyState) *pollwarden.KeyState {
	c := *ks
	c.Waiting = append([]pollwarden.KeyWaiter(nil), ks.Waiting...)
	c.Granted = append([]pollwarden.KeyOwnerCount(nil), ks.Granted...)
	return &c
}

// granted is owner's count of grants this window.
func granted(ks *pollwarden.KeyState, owner string) int {
	for _, g := range ks.Granted {
		if g.Owner == owner {
			return g.Count
		}
	}
	return 0
}

// rollWindow starts a new window of a declared quota when the current
// one (Per long, from its start) is over: the window's counts, which the
// views show and fairness reads, start again.
func rollWindow(ks *pollwarden.KeyState, now time.Time, c *pollwarden.Contract) bool {
	if !declared(c) {
		return false
	}
	q := c.Quota
	changed := ks.Requests != q.Requests || ks.Per != q.Per
	ks.Requests, ks.Per = q.Requests, q.Per
	if !ks.WindowStart.IsZero() && now.Before(ks.WindowStart.Add(q.Per)) {
		return changed
	}
	ks.WindowStart, ks.WindowUsed, ks.Granted = now, 0, nil
	return true
}

// unwait removes one operation of prio and owner from the waiters.
func unwait(ks *pollwarden.KeyState, prio int, owner string) bool {
	for i, w := range ks.Waiting {
		if w.Priority == prio && w.Owner == owner {
			if w.Count <= 1 {
				ks.Waiting = append(ks.Waiting[:i], ks.Waiting[i+1:]...)
			} else {
				ks.Waiting[i].Count--
			}
			return true
		}
	}
	return false
}

// expireWaiters drops the entries no longer counted.
func expireWaiters(ks *pollwarden.KeyState, now time.Time) bool {
	kept := ks.Waiting[:0]
	for _, w := range ks.Waiting {
		if now.Before(w.Until) && w.Count > 0 {
			kept = append(kept, w)
		}
	}
	changed := len(kept) != len(ks.Waiting)
	ks.Waiting = kept
	return changed
}

// wait adds one operation of prio and owner to the waiters, counted
// until until. When the entries are at their bound, the one that expires
// first gives way.
func wait(ks *pollwarden.KeyState, prio int, owner string, until time.Time) {
	for i, w := range ks.Waiting {
		if w.Priority == prio && w.Owner == owner {
			ks.Waiting[i].Count++
			ks.Waiting[i].Until = maxTime(w.Until, until)
			return
		}
	}
	if len(ks.Waiting) >= MaxKeyWaiters {
		first := 0
		for i, w := range ks.Waiting {
			if w.Until.Before(ks.Waiting[first].Until) {
				first = i
			}
		}
		ks.Waiting = append(ks.Waiting[:first], ks.Waiting[first+1:]...)
	}
	ks.Waiting = append(ks.Waiting, pollwarden.KeyWaiter{Priority: prio, Owner: owner, Count: 1, Until: until})
}

// declared reports whether c declares a quota of its own (requests per
// per), not only the provider's count.
func declared(c *pollwarden.Contract) bool {
	return c.Quota != nil && c.Quota.Requests > 0 && c.Quota.Per > 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
