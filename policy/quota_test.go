package policy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

var quotaT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func quotaContract(requests int, per time.Duration) *pollwarden.ContractSpec {
	return &pollwarden.ContractSpec{Name: "q", Backoff: pollwarden.Backoff{Base: 2 * time.Second, Max: time.Minute},
		Quota: &pollwarden.QuotaSpec{Requests: requests, Per: per, Key: pollwarden.QuotaKeyCredential, RemainingHeader: "x-ratelimit-remaining"}}
}

func quotaOp(id, owner string, prio int) *pollwarden.Operation {
	return &pollwarden.Operation{ID: id, Owner: owner, Priority: prio}
}

// take runs one claim's decision and keeps the row it returns, as the
// store does.
func take(ks **pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) pollwarden.KeyGrant {
	next, g := policy.KeyGrant(*ks, op, c, now)
	if next != nil {
		*ks = next
	}
	if !g.OK {
		op.NextPollSource = pollwarden.DelaySharedQuota
	} else {
		op.NextPollSource = pollwarden.DelayLocalBackoff
	}
	return g
}

// The shared quota's promise: whatever the interleaving of operations,
// priorities, owners, learned holds and clock jumps (backwards too, as
// processes' clocks differ), no window of Per holds more than Requests
// grants.
func TestKeyGrantNeverExceedsTheQuota(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		requests := rapid.IntRange(1, 20).Draw(t, "requests")
		per := time.Duration(rapid.Int64Range(int64(time.Second), int64(time.Hour)).Draw(t, "per"))
		c := quotaContract(requests, per)
		ks := pollwarden.NewKeyState("env:TOKEN")
		ops := make([]*pollwarden.Operation, rapid.IntRange(1, 8).Draw(t, "ops"))
		for i := range ops {
			ops[i] = quotaOp(fmt.Sprint("op", i), fmt.Sprint("owner", rapid.IntRange(0, 3).Draw(t, "owner")), rapid.IntRange(0, 9).Draw(t, "prio"))
		}
		now := quotaT0
		var grants []time.Time
		var until time.Time
		for range rapid.IntRange(1, 300).Draw(t, "steps") {
			if !until.IsZero() && rapid.Bool().Draw(t, "come back when told") {
				// A held operation comes back exactly when it was told to.
				now = until
			} else {
				now = now.Add(time.Duration(rapid.Int64Range(-int64(per)/4, int64(per)/2).Draw(t, "advance")))
			}
			if rapid.IntRange(0, 30).Draw(t, "note") == 0 {
				obs := pollwarden.Observation{Status: 429, RetryAfter: fmt.Sprint(rapid.IntRange(0, 100).Draw(t, "retry")), ReceivedAt: now}
				if next, _ := policy.KeyNote(ks, ops[0], c, obs, now); next != nil {
					ks = next
				}
				continue
			}
			op := ops[rapid.IntRange(0, len(ops)-1).Draw(t, "op")]
			if g := take(&ks, op, c, now); g.OK {
				grants = append(grants, now)
			} else if g.Until.Before(now) {
				t.Fatalf("held until %s, before now %s", g.Until, now)
			} else {
				until = g.Until
			}
		}
		slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
		for i := range grants {
			n := 0
			for _, g := range grants[i:] {
				if g.Sub(grants[i]) < per {
					n++
				}
			}
			if n > requests {
				t.Fatalf("%d grants in the window of %s from %s; quota %d", n, per, grants[i], requests)
			}
		}
	})
}

// A key with no quota and nothing learned writes nothing and holds nothing.
func TestKeyGrantWithoutQuotaWritesNothing(t *testing.T) {
	c := &pollwarden.ContractSpec{Name: "q"}
	next, g := policy.KeyGrant(pollwarden.NewKeyState("q"), quotaOp("a", "", 0), c, quotaT0)
	if next != nil || !g.OK {
		t.Fatalf("no quota: row %+v, grant %+v; want nothing written, granted", next, g)
	}
}

// A slot that a more urgent waiter is due for is not taken by a less
// urgent request that happens to ask first.
func TestKeyGrantPriorityFirst(t *testing.T) {
	c := quotaContract(60, time.Minute) // one a second
	ks := pollwarden.NewKeyState("k")
	first, urgent, low := quotaOp("first", "a", 5), quotaOp("urgent", "a", 1), quotaOp("low", "a", 9)
	if g := take(&ks, first, c, quotaT0); !g.OK {
		t.Fatalf("first request held: %+v", g)
	}
	g := take(&ks, urgent, c, quotaT0.Add(100*time.Millisecond))
	if g.OK || g.Source != pollwarden.DelaySharedQuota || !g.Until.Equal(quotaT0.Add(time.Second)) {
		t.Fatalf("urgent within the interval: %+v; want held until the next slot", g)
	}
	if g := take(&ks, low, c, quotaT0.Add(time.Second)); g.OK {
		t.Fatal("a low-priority request took the slot an urgent one waits for")
	} else if !strings.Contains(g.Detail, "1 waiting ahead") {
		t.Errorf("held detail %q does not say who is ahead", g.Detail)
	}
	if g := take(&ks, urgent, c, quotaT0.Add(time.Second)); !g.OK {
		t.Fatalf("the urgent request at its slot: %+v", g)
	}
	if g := take(&ks, low, c, quotaT0.Add(2*time.Second)); !g.OK {
		t.Fatalf("the low request once nobody more urgent waits: %+v", g)
	}
}

// At one priority, an owner who was granted more this window yields the
// slot to a waiting owner who was granted less.
func TestKeyGrantFairAcrossOwners(t *testing.T) {
	c := quotaContract(60, time.Minute)
	ks := pollwarden.NewKeyState("k")
	now := quotaT0
	for i := range 3 {
		if g := take(&ks, quotaOp(fmt.Sprint("a", i), "alice", 5), c, now); !g.OK {
			t.Fatalf("alice's request %d: %+v", i, g)
		}
		now = now.Add(time.Second)
	}
	bob := quotaOp("b", "bob", 5)
	if g := take(&ks, bob, c, now.Add(-500*time.Millisecond)); g.OK {
		t.Fatal("bob's request inside the interval was granted")
	}
	if g := take(&ks, quotaOp("a9", "alice", 5), c, now); g.OK {
		t.Fatal("alice (3 granted) took the slot bob (0 granted) waits for")
	}
	if g := take(&ks, bob, c, now); !g.OK {
		t.Fatalf("bob at his slot: %+v", g)
	}
}

// A waiter that does not come back at its promised slot stops claiming
// free slots shortly after (two intervals, at most policy.MaxDueGrace):
// it cannot hold the others off, and leave the slots unused, for long.
func TestKeyGrantStaleWaiterExpires(t *testing.T) {
	c := quotaContract(60, time.Minute)
	ks := pollwarden.NewKeyState("k")
	take(&ks, quotaOp("first", "a", 5), c, quotaT0)
	gone := quotaOp("gone", "a", 1)
	g := take(&ks, gone, c, quotaT0)
	if g.OK {
		t.Fatal("second request in the interval granted")
	}
	low := quotaOp("low", "a", 9)
	if g := take(&ks, low, c, g.Until.Add(policy.MaxDueGrace/2)); g.OK {
		t.Fatal("granted while the urgent waiter is due")
	}
	if g := take(&ks, low, c, g.Until.Add(policy.MaxDueGrace+time.Millisecond)); !g.OK {
		t.Fatalf("still held after the urgent waiter's slot went by: %+v", g)
	}
}

// The row stays bounded however many owners and priorities wait.
func TestKeyGrantRowBounded(t *testing.T) {
	c := quotaContract(1, time.Hour)
	ks := pollwarden.NewKeyState("k")
	for i := range 1000 {
		take(&ks, quotaOp(fmt.Sprint("op", i), fmt.Sprint("owner", i), i%9+1), c, quotaT0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(ks.Waiting) > policy.MaxKeyWaiters || len(ks.Granted) > policy.MaxKeyOwners {
		t.Fatalf("row grew: %d waiting entries, %d owners", len(ks.Waiting), len(ks.Granted))
	}
}

// A 429 on one operation holds every operation under the key until the
// reset it gave.
func TestKeyNoteRateLimitHoldsTheKey(t *testing.T) {
	c := quotaContract(5000, time.Hour)
	ks := pollwarden.NewKeyState("env:TOKEN")
	obs := pollwarden.Observation{Status: 429, RetryAfter: "120", ReceivedAt: quotaT0}
	next, eff := policy.KeyNote(ks, quotaOp("a", "x", 5), c, obs, quotaT0)
	if next == nil || !next.HoldUntil.Equal(quotaT0.Add(2*time.Minute)) || !eff.Held.Equal(next.HoldUntil) {
		t.Fatalf("after a 429 with Retry-After 120: %+v, %+v", next, eff)
	}
	g := take(&next, quotaOp("other", "y", 1), c, quotaT0.Add(time.Second))
	if g.OK || !g.Until.Equal(quotaT0.Add(2*time.Minute)) || g.Source != pollwarden.DelaySharedQuota ||
		!strings.Contains(g.Detail, "rate limited") {
		t.Fatalf("another operation under the key: %+v; want held until the reset", g)
	}
	if g := take(&next, quotaOp("other", "y", 1), c, quotaT0.Add(2*time.Minute)); !g.OK {
		t.Fatalf("at the reset: %+v", g)
	}
	// A rate_limit.when signal is a rate limit too.
	obs = pollwarden.Observation{Status: 403, RateLimitSignal: "403 with x-ratelimit-remaining 0", ReceivedAt: quotaT0}
	if next, _ := policy.KeyNote(ks, quotaOp("a", "x", 5), c, obs, quotaT0); next == nil || !next.HoldUntil.After(quotaT0) {
		t.Fatalf("a rate_limit.when answer held nothing: %+v", next)
	}
	// A plain answer teaches nothing and writes nothing.
	if next, _ := policy.KeyNote(ks, quotaOp("a", "x", 5), c, pollwarden.Observation{Status: 200}, quotaT0); next != nil {
		t.Fatalf("a 200 wrote the row: %+v", next)
	}
}

// With remaining_header and a reset, what remains is spread until the
// reset; a count of 0 holds the key until the reset.
func TestKeyNoteSpreadsTheRemaining(t *testing.T) {
	c := quotaContract(5000, time.Hour)
	ks := pollwarden.NewKeyState("k")
	obs := pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "10", HasRemaining: true, ResetIn: 100 * time.Second, HasReset: true}}
	next, _ := policy.KeyNote(ks, quotaOp("a", "x", 5), c, obs, quotaT0)
	if next == nil || next.Remaining != 10 || !next.ResetAt.Equal(quotaT0.Add(100*time.Second)) {
		t.Fatalf("remaining not learned: %+v", next)
	}
	if g := take(&next, quotaOp("a", "x", 5), c, quotaT0); !g.OK {
		t.Fatalf("first request: %+v", g)
	}
	g := take(&next, quotaOp("b", "x", 5), c, quotaT0.Add(time.Second))
	if g.OK || !g.Until.Equal(quotaT0.Add(10*time.Second)) {
		t.Fatalf("10 left for 100 s: want the next at +10s, got %+v", g)
	}
	obs.Quota.Remaining = "0"
	next, eff := policy.KeyNote(ks, quotaOp("a", "x", 5), c, obs, quotaT0)
	if next == nil || !next.HoldUntil.Equal(quotaT0.Add(100*time.Second)) || eff.Held.IsZero() {
		t.Fatalf("0 remaining: %+v, %+v; want held until the reset", next, eff)
	}
}

// The provider's values are untrusted: each bad one is bounded or
// ignored, with a reason that names it.
func TestKeyNoteBadProviderValues(t *testing.T) {
	c := quotaContract(5000, time.Hour)
	for _, tc := range []struct {
		name      string
		obs       pollwarden.Observation
		remaining int // -1: not learned
		holdFor   time.Duration
		reason    string
	}{
		{"not a number", pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "lots", HasRemaining: true}}, -1, 0, `x-ratelimit-remaining "lots" is not a whole number`},
		{"negative", pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "-3", HasRemaining: true}}, -1, 0, "x-ratelimit-remaining -3 is negative"},
		{"huge", pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "99999999999999999999999", HasRemaining: true}}, 5000, 0, "bounded to 5000"},
		{"above the quota", pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "7000", HasRemaining: true}}, 5000, 0, "more than the quota's 5000"},
		{"reset in the past", pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "7", HasRemaining: true,
			ResetProblem: "x-ratelimit-reset 1 is in the past"}}, 7, 0, "x-ratelimit-reset 1 is in the past: the remaining count is not spread"},
		{"reset years ahead", pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "7", HasRemaining: true,
			ResetIn: 3 * 365 * 24 * time.Hour, HasReset: true}}, 7, 0, "bounded to 24h0m0s"},
		{"retry-after years ahead", pollwarden.Observation{Status: 429, RetryAfter: "99999999", ReceivedAt: quotaT0}, -1, policy.MaxKeyHold, "the key is held 24h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, eff := policy.KeyNote(pollwarden.NewKeyState("k"), quotaOp("a", "x", 5), c, tc.obs, quotaT0)
			if !slices.ContainsFunc(eff.Ignored, func(s string) bool { return strings.Contains(s, tc.reason) }) {
				t.Errorf("reasons %q; want one with %q", eff.Ignored, tc.reason)
			}
			got := -1
			if next != nil {
				got = next.Remaining
			}
			if got != tc.remaining {
				t.Errorf("remaining %d, want %d", got, tc.remaining)
			}
			if tc.holdFor > 0 && (next == nil || !next.HoldUntil.Equal(quotaT0.Add(tc.holdFor))) {
				t.Errorf("hold %+v, want %s", next, tc.holdFor)
			}
			if next != nil && next.ResetAt.After(quotaT0.Add(policy.MaxKeyHold)) {
				t.Errorf("reset kept %s ahead", next.ResetAt.Sub(quotaT0))
			}
		})
	}
}

// Without a declared limit, the provider's count alone spaces requests
// until its reset; nothing else holds them, and no row is written for a
// grant it does not space.
func TestKeyGrantLearnedOnly(t *testing.T) {
	c := &pollwarden.ContractSpec{Name: "q", Backoff: pollwarden.Backoff{Base: time.Second},
		Quota: &pollwarden.QuotaSpec{Key: pollwarden.QuotaKeyCredential, RemainingHeader: "x-left"}}
	ks := pollwarden.NewKeyState("k")
	if next, g := policy.KeyGrant(ks, quotaOp("a", "x", 5), c, quotaT0); next != nil || !g.OK {
		t.Fatalf("nothing learned yet: %+v, %+v", next, g)
	}
	obs := pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "4", HasRemaining: true, ResetIn: 40 * time.Second, HasReset: true}}
	ks, _ = policy.KeyNote(ks, quotaOp("a", "x", 5), c, obs, quotaT0)
	if g := take(&ks, quotaOp("a", "x", 5), c, quotaT0); !g.OK {
		t.Fatalf("first: %+v", g)
	}
	if g := take(&ks, quotaOp("b", "x", 5), c, quotaT0.Add(time.Second)); g.OK || !g.Until.Equal(quotaT0.Add(10*time.Second)) {
		t.Fatalf("4 left for 40 s: %+v; want the next at +10s", g)
	}
	obs.Quota.Remaining = "99999999999999"
	_, eff := policy.KeyNote(pollwarden.NewKeyState("k"), quotaOp("a", "x", 5), c, obs, quotaT0)
	if len(eff.Ignored) != 1 || !strings.Contains(eff.Ignored[0], "bounded to 1000000000") {
		t.Fatalf("huge count without a declared quota: %q", eff.Ignored)
	}
}

// Only an answer that can teach the key makes its save read the row.
func TestKeyTaught(t *testing.T) {
	c := quotaContract(10, time.Minute)
	for _, tc := range []struct {
		obs  pollwarden.Observation
		want bool
	}{
		{pollwarden.Observation{Status: 200}, false},
		{pollwarden.Observation{Status: 503}, true}, // a failure counts for the incident rule
		{pollwarden.Observation{Transport: pollwarden.TransportTimeout}, true},
		{pollwarden.Observation{Status: 401}, true},
		{pollwarden.Observation{Status: 404}, false},
		{pollwarden.Observation{Status: 429}, true},
		{pollwarden.Observation{Status: 403, RateLimitSignal: "403 with x-ratelimit-remaining 0"}, true},
		{pollwarden.Observation{Status: 200, Quota: pollwarden.QuotaFacts{Remaining: "3", HasRemaining: true}}, true},
	} {
		if got := policy.KeyTaught(c, tc.obs); got != tc.want {
			t.Errorf("%+v: taught %v, want %v", tc.obs, got, tc.want)
		}
		// Whatever KeyTaught says no to, KeyNote writes nothing for.
		if next, _ := policy.KeyNote(pollwarden.NewKeyState("k"), quotaOp("a", "x", 5), c, tc.obs, quotaT0); !tc.want && next != nil {
			t.Errorf("%+v: KeyNote wrote %+v", tc.obs, next)
		}
	}
}
