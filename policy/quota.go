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
	// MaxDueGrace bounds how long after its promised slot a waiter still
	// claims a free slot (it is also at most two intervals): a waiter that
	// comes back later, or never, leaves the slot to whoever asks, so a
	// free slot never goes unused for long while a request is due.
	MaxDueGrace = time.Second
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
// its reset) only ever make the spacing longer. A free slot goes to the
// request that asks for it unless a more deserving waiter is due for it
// (see due): the quota is work-conserving, and priority then fairness
// across owners decide who is promised the next slots (see promise).
func KeyGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	return keyGrant(ks, op, c, now, true)
}

// ActionGrant is KeyGrant for a credentialed request that is not a status
// request (a submission, a cancel, a result fetch): under an open outage
// it holds and never takes the probe's slot, since its answer cannot tell
// whether the provider is back and so would not free the slot; once an
// incident is over it goes to the quota at once (the resume spread is for
// the held operations' status requests).
func ActionGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	return keyGrant(ks, op, c, now, false)
}

func keyGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time, status bool) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	if ks.Incident.Open != nil || (status && op.NextPollSource == pollwarden.DelayProviderIncident) {
		return keyIncident(ks, op, c, now, status)
	}
	next := cloneKey(ks)
	prio, owner := op.EffectivePriority(), op.Owner
	changed := rollWindow(next, now, c)
	gap := keyInterval(next, c, now)
	grace := dueGrace(gap)
	if op.NextPollSource == pollwarden.DelaySharedQuota {
		// It was waiting for this: it is no longer one of the waiters.
		changed = unwait(next, prio, owner) || changed
	}
	changed = expireWaiters(next, now, grace) || changed
	free := keyFree(next, now)
	if !now.Before(free) && (gap == 0 || due(next, prio, owner, now, grace) == 0) {
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
	n := ahead(next, prio, owner, now)
	until := promise(next, maxTime(free, now), gap, n)
	wait(next, prio, owner, until)
	next.UpdatedAt = now
	return next, pollwarden.KeyGrant{Until: until, Source: pollwarden.DelaySharedQuota, Detail: heldDetail(next, c, now, free, n)}
}

// heldDetail says why a request waits: the provider's hold, or the
// shared quota's spacing, and behind how many waiters.
func heldDetail(ks *pollwarden.KeyState, c *pollwarden.ContractSpec, now, free time.Time, n int) string {
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
func keyInterval(ks *pollwarden.KeyState, c *pollwarden.ContractSpec, now time.Time) time.Duration {
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

// ahead counts the operations waiting that a held request of priority
// prio and owner owner stands in line with or behind, the number its
// story gives: every waiter of a more urgent priority, then, at the same
// priority, those of owners granted fewer or as many requests this
// window (an equal share each), its own owner's included.
func ahead(ks *pollwarden.KeyState, prio int, owner string, now time.Time) int {
	mine := granted(ks, owner)
	n := 0
	for _, w := range ks.Waiting {
		if !now.Before(w.Until) || w.Count <= 0 {
			continue
		}
		if w.Priority < prio || w.Priority == prio && (w.Owner == owner || granted(ks, w.Owner) <= mine) {
			n += w.Count
		}
		if n >= maxAhead {
			return maxAhead
		}
	}
	return n
}

// promise is the slot a held request is told to come back at: behind
// the n waiters ahead of it, but never past the slot after the latest
// one promised, since those ahead may hold slots already spent or
// promised twice: every slot up to the last promise stays promised to
// someone, and a waiter that finds a more deserving one due at its slot
// is held again and placed anew.
func promise(ks *pollwarden.KeyState, start time.Time, gap time.Duration, n int) time.Time {
	var last time.Time
	for _, w := range ks.Waiting {
		last = maxTime(last, lastPromise(w))
	}
	tail := start
	if !last.IsZero() {
		tail = maxTime(start, last.Add(gap))
	}
	return minTime(start.Add(gap*time.Duration(n)), tail)
}

// due counts the waiters that may take a free slot from a request of
// priority prio and owner owner: those more deserving (a more urgent
// priority, or the same priority and an owner granted fewer this window)
// AND due, their earliest promised slot come and not more than grace
// ago. A waiter promised a later slot, or one that did not come back,
// leaves the free slot to the request: the quota is work-conserving,
// and priority and fairness decide who is promised the next slots.
func due(ks *pollwarden.KeyState, prio int, owner string, now time.Time, grace time.Duration) int {
	mine := granted(ks, owner)
	n := 0
	for _, w := range ks.Waiting {
		d := dueAt(w)
		if w.Count <= 0 || now.Before(d) || !now.Before(d.Add(grace)) {
			continue
		}
		if w.Priority < prio || w.Priority == prio && w.Owner != owner && granted(ks, w.Owner) < mine {
			n++
		}
	}
	return n
}

// dueGrace is how long after its promised slot a waiter still claims a
// free slot: two intervals, at most MaxDueGrace.
func dueGrace(gap time.Duration) time.Duration {
	if gap <= 0 {
		gap = NoQuotaGap
	}
	return min(2*gap, MaxDueGrace)
}

// dueAt is the earliest slot promised to one of w's operations still out.
func dueAt(w pollwarden.KeyWaiter) time.Time {
	if w.Due.IsZero() {
		return lastPromise(w)
	}
	return w.Due
}

// lastPromise is the latest slot promised to one of w's operations.
func lastPromise(w pollwarden.KeyWaiter) time.Time {
	return w.Until.Add(-WaiterGrace)
}

// settle takes k of w's operations off the entry, the earliest promised
// first. The row keeps only the earliest and latest promise of an entry,
// so the rest are taken as due at the latest: a guess that is too early
// would hold requests off free slots nobody comes for, one too late only
// lets a less deserving request take a slot first. It reports whether
// the entry is now empty.
func settle(w *pollwarden.KeyWaiter, k int) bool {
	if k >= w.Count {
		w.Count = 0
		return true
	}
	w.Count -= k
	w.Due = lastPromise(*w)
	return false
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
func rollWindow(ks *pollwarden.KeyState, now time.Time, c *pollwarden.ContractSpec) bool {
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
			if settle(&ks.Waiting[i], 1) {
				ks.Waiting = append(ks.Waiting[:i], ks.Waiting[i+1:]...)
			}
			return true
		}
	}
	return false
}

// expireWaiters drops the entries no longer counted, and the operations
// that did not come back within grace of their promised slot: they no
// longer hold a place in line (one that comes back later is held again
// and placed anew).
func expireWaiters(ks *pollwarden.KeyState, now time.Time, grace time.Duration) bool {
	kept := ks.Waiting[:0]
	changed := false
	for _, w := range ks.Waiting {
		if !now.Before(w.Until) || w.Count <= 0 {
			changed = true
			continue
		}
		if gone := noShows(w, now, grace); gone > 0 {
			changed = true
			if settle(&w, gone) {
				continue
			}
		}
		kept = append(kept, w)
	}
	ks.Waiting = kept
	return changed
}

// noShows counts w's operations taken as gone: the earliest once its
// slot is more than grace ago, all once the latest is.
func noShows(w pollwarden.KeyWaiter, now time.Time, grace time.Duration) int {
	switch {
	case now.Before(dueAt(w).Add(grace)):
		return 0
	case !now.Before(lastPromise(w).Add(grace)):
		return w.Count
	}
	return 1
}

// wait adds one operation of prio and owner to the waiters, promised the
// slot at slot; the entry counts until its latest promise plus
// WaiterGrace. When the entries are at their bound, the one that expires
// first gives way.
func wait(ks *pollwarden.KeyState, prio int, owner string, slot time.Time) {
	until := slot.Add(WaiterGrace)
	for i, w := range ks.Waiting {
		if w.Priority == prio && w.Owner == owner {
			ks.Waiting[i].Due = minTime(dueAt(w), slot)
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
	ks.Waiting = append(ks.Waiting, pollwarden.KeyWaiter{Priority: prio, Owner: owner, Count: 1, Until: until, Due: slot})
}

// declared reports whether c declares a quota of its own (requests per
// per), not only the provider's count.
func declared(c *pollwarden.ContractSpec) bool {
	return c.Quota != nil && c.Quota.Requests > 0 && c.Quota.Per > 0
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
