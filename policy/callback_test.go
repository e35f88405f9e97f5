package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// pendingAt is an operation whose last answer (200, pending) came at
// answered and whose next backoff poll is at next.
func pendingAt(t *testing.T, c *pollwarden.ContractSpec, answered, next time.Time) *pollwarden.Operation {
	t.Helper()
	op := polledOp(t, c, 3, next)
	a := answered
	op.LastHTTP, op.LastHTTPAt, op.NextPollSource = 200, &a, pollwarden.DelayLocalBackoff
	return op
}

// TestCallbackWakesForOneRequestAsTheGatesAllow: a callback moves the next
// request to now (never sooner than the base delay after the last answer),
// records why, and a second callback before that request changes nothing.
// The woken request then passes Gate like any other, and is not spread
// however late the daemon takes it.
func TestCallbackWakesForOneRequestAsTheGatesAllow(t *testing.T) {
	c := testContract()
	answered := t0.Add(time.Minute)
	op := pendingAt(t, c, answered, answered.Add(80*time.Second))
	now := answered.Add(30 * time.Second)
	w := Callback(op, c, now)
	if !w.Woken || !w.Op.NextPollAt.Equal(now) || w.Op.NextPollSource != pollwarden.DelayCallback || !w.Replaced.Equal(op.NextPollAt) {
		t.Fatalf("woken %v next %s source %s replaced %s; want woken for now (%s), replacing %s", w.Woken, w.Op.NextPollAt, w.Op.NextPollSource, w.Replaced, now, op.NextPollAt)
	}
	if len(w.Events) != 1 || w.Events[0].Kind != pollwarden.EventNextCheckScheduled || w.Events[0].Data.DelaySource != pollwarden.DelayCallback {
		t.Fatalf("events %+v, want one next_check_scheduled from the callback", w.Events)
	}
	if !op.NextPollAt.Equal(answered.Add(80*time.Second)) || op.NextPollSource != pollwarden.DelayLocalBackoff {
		t.Fatal("Callback changed its input")
	}
	if again := Callback(w.Op, c, now.Add(time.Second)); again.Woken {
		t.Fatal("a duplicate callback before the woken request moved it again")
	}
	if g := Gate(w.Op, c, now.Add(10*time.Minute)); g.Verdict != Send {
		t.Fatalf("the woken request, taken 10 min late: verdict %d spread %v, want Send", g.Verdict, g.Spread)
	}

	// Right after an answer: not before the base delay has passed.
	soon := answered.Add(time.Second)
	if w := Callback(op, c, soon); !w.Woken || !w.Op.NextPollAt.Equal(answered.Add(c.Backoff.Base)) {
		t.Fatalf("a second after the answer: next %s, want the base delay after it (%s)", w.Op.NextPollAt, answered.Add(c.Backoff.Base))
	}
}

func TestCallbackChangesNothingWhereTheProviderSetAMinimum(t *testing.T) {
	c := testContract()
	answered := t0.Add(time.Minute)
	now := answered.Add(30 * time.Second)
	final := pendingAt(t, c, answered, answered.Add(80*time.Second))
	final.Phase = pollwarden.PhaseSucceeded
	retryAfter := pendingAt(t, c, answered, answered.Add(120*time.Second))
	retryAfter.LastHTTP, retryAfter.NextPollSource = 503, pollwarden.DelayRetryAfter
	limited := pendingAt(t, c, answered, answered.Add(100*time.Second))
	limited.LastHTTP = 429
	due := pendingAt(t, c, answered, now.Add(-time.Second))
	for name, op := range map[string]*pollwarden.Operation{
		"final": final, "inside a Retry-After window": retryAfter, "after a bare 429": limited, "already due": due,
	} {
		if w := Callback(op, c, now); w.Woken || w.Op != op || w.Why == "" {
			t.Errorf("%s: woken %v (why %q); want no change, with a reason", name, w.Woken, w.Why)
		}
	}
	// The budget and the deadline stay Gate's: a woken record past its
	// budget stops instead of sending.
	spent := pendingAt(t, c, answered, answered.Add(80*time.Second))
	spent.StatusRequestsUsed = spent.MaxStatusRequests
	w := Callback(spent, c, now)
	if g := Gate(w.Op, c, now); g.Verdict != Stop || g.Op.Reason != pollwarden.ReasonRequestBudgetExhausted {
		t.Fatalf("woken past its budget: verdict %d reason %s, want Stop request_budget_exhausted", g.Verdict, g.Op.Reason)
	}
}

// TestCallbackHoldIsASafetyNet: while callbacks are trusted a pending
// operation's backoff poll waits for the safety net, 4–5.6 × max after
// its last answer; never past the deadline, never over a provider's time,
// and not at all while untrusted.
func TestCallbackHoldIsASafetyNet(t *testing.T) {
	c := testContract()
	answered := t0.Add(time.Minute)
	op := pendingAt(t, c, answered, answered.Add(20*time.Second))
	until, ok := CallbackHold(op, c, answered, true)
	lo, hi := answered.Add(SafetyNetFactor*c.Backoff.Max/2), answered.Add(time.Duration(CappedFactorMax*float64(SafetyNetFactor*c.Backoff.Max)))
	if !ok || until.Before(lo) || until.After(hi) {
		t.Fatalf("hold %v until %s, want one in [%s, %s]", ok, until, lo, hi)
	}
	if _, ok := CallbackHold(op, c, answered, false); ok {
		t.Error("held while callbacks are not trusted")
	}
	ra := pendingAt(t, c, answered, answered.Add(20*time.Second))
	ra.NextPollSource = pollwarden.DelayRetryAfter
	if _, ok := CallbackHold(ra, c, answered, true); ok {
		t.Error("held a Retry-After time")
	}
	woken := Callback(op, c, answered.Add(10*time.Second)).Op
	if _, ok := CallbackHold(woken, c, answered.Add(10*time.Second), true); ok {
		t.Error("held the request a callback asked for")
	}
	late := pendingAt(t, c, op.DeadlineAt.Add(-3*time.Minute), op.DeadlineAt.Add(-2*time.Minute))
	if _, ok := CallbackHold(late, c, op.DeadlineAt.Add(-3*time.Minute), true); ok {
		t.Error("held to or past the deadline")
	}
	held := op.Clone()
	held.NextPollAt = until
	if _, ok := CallbackHold(held, c, until, true); ok {
		t.Error("held again at the hold's own time")
	}
}

func TestCallbackTrustIsLearned(t *testing.T) {
	var tr CallbackTrust
	if tr.Trusted() {
		t.Fatal("trusted before any evidence")
	}
	for range trustMinAnnounced - 1 {
		tr = tr.Observe(true)
	}
	if tr.Trusted() {
		t.Fatalf("trusted after %d announced ends, want at least %d", trustMinAnnounced-1, trustMinAnnounced)
	}
	if tr = tr.Observe(true); !tr.Trusted() {
		t.Fatal("not trusted after every end seen was announced")
	}
	half := CallbackTrust{}
	for range 200 {
		half = half.Observe(true).Observe(false)
	}
	if half.Trusted() {
		t.Fatal("trusted with half the callbacks lost")
	}
	// Late callbacks turn silent ends into announced ones.
	for range 200 {
		half = half.LateCallback()
	}
	if !half.Trusted() {
		t.Fatalf("every silent end was announced late, still not trusted: %+v", half)
	}
	// The verdict follows recent ends: callbacks that stop arriving lose
	// the trust within a window.
	for range trustWindow {
		tr = tr.Observe(true)
	}
	n := 0
	for ; tr.Trusted(); n++ {
		tr = tr.Observe(false)
	}
	if n > trustWindow/2 {
		t.Fatalf("still trusted after %d silent ends in a row", n)
	}
}
