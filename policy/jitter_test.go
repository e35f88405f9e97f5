package policy

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

// TestR5_FactorIsLogUniformInHalfToOne: the per-operation factor is
// 0.5·2^u for the uniform draw u, so log2(2f) is flat: each of ten equal
// slices of [0.5, 1] in log scale holds a tenth of many draws. A uniform
// factor puts 30 % fewer draws than that in the lowest slice and fails here.
func TestR5_FactorIsLogUniformInHalfToOne(t *testing.T) {
	for u, want := range map[float64]float64{0: 0.5, 0.5: 0.5 * math.Exp2(0.5), 0.25: 0.5 * math.Pow(2, 0.25)} {
		if got := DrawFactor(fixedRand(u)); math.Abs(got-want) > 1e-15 {
			t.Errorf("DrawFactor(%v) = %v, want %v", u, got, want)
		}
	}
	if f := DrawFactor(fixedRand(math.Nextafter(1, 0))); !ValidFactor(f) {
		t.Errorf("DrawFactor(largest draw) = %v, outside [0.5, 1]", f)
	}
	r := seeded(7)
	const n, bins = 100000, 10
	var h [bins]int
	for range n {
		f := DrawFactor(r)
		if !ValidFactor(f) {
			t.Fatalf("factor %v outside [0.5, 1]", f)
		}
		h[min(int(math.Log2(2*f)*bins), bins-1)]++
	}
	for i, c := range h {
		// n/bins = 10,000 per bin; 4 % is over four standard deviations.
		if c < n/bins*96/100 || c > n/bins*104/100 {
			t.Errorf("factor bin [%.3f, %.3f): %d of %d draws, want about %d",
				0.5*math.Exp2(float64(i)/bins), 0.5*math.Exp2(float64(i+1)/bins), c, n, n/bins)
		}
	}
}

// TestR5_FactorDrawnOncePerOperation: the factor is drawn when the
// operation is created and kept on the record; every later delay uses it,
// whatever the random source says then.
func TestR5_FactorDrawnOncePerOperation(t *testing.T) {
	c := testContract()
	op, _, err := NewOperation(c, NewParams{ID: "op", ProviderJobID: "j", Rand: fixedRand(0.5)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	f := 0.5 * math.Exp2(0.5)
	if op.JitterFactor != f {
		t.Fatalf("factor at creation %v, want 0.5·√2 from the draw 0.5", op.JitterFactor)
	}
	now := t0
	for poll := 1; poll <= 4; poll++ {
		res := reservedAt(t, c, op, now)
		// Two decisions on the same reservation with opposite draws must
		// schedule the same time: the delay does not depend on them.
		a := Decide(res, c, obs200("running", nil), now, fixedRand(0))
		b := Decide(res, c, obs200("running", nil), now, fixedRand(0.999))
		if !a.Op.NextPollAt.Equal(b.Op.NextPollAt) || a.Op.JitterFactor != f {
			t.Fatalf("poll %d: next %s vs %s (factor %v): the delay was drawn per delay", poll, a.Op.NextPollAt, b.Op.NextPollAt, a.Op.JitterFactor)
		}
		raw := RawDelay(c.Backoff, poll)
		if got, want := a.Op.NextPollAt.Sub(now), time.Duration(f*float64(raw)); raw < c.Backoff.Max && got != want {
			t.Fatalf("poll %d: delay %s, want %v × raw %s = %s", poll, got, f, raw, want)
		}
		op, now = a.Op, a.Op.NextPollAt
	}
}

// TestR5_OldRecordWithoutFactorGetsOneAtItsNextDecision: a record stored
// before the factor existed (0) is not stuck: its next decision draws a
// factor, keeps it, and uses it.
func TestR5_OldRecordWithoutFactorGetsOneAtItsNextDecision(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	op.JitterFactor = 0
	res := reservedAt(t, c, op, t0)
	st := Decide(res, c, obs200("running", nil), t0, fixedRand(1.0/3))
	if want := 0.5 * math.Exp2(1.0/3); st.Op.JitterFactor != want {
		t.Fatalf("factor after the first decision %v, want %v", st.Op.JitterFactor, want)
	}
	if got, want := st.Op.NextPollAt.Sub(t0), Delay(c.Backoff, 1, st.Op.JitterFactor); got != want {
		t.Fatalf("delay %s, want %s from the new factor", got, want)
	}
}

// TestR5_FactorNarrowsAtTheCap: below backoff.max the delay is factor ×
// raw; once raw has reached it the factor maps into [0.5, 0.7], the
// ends to the ends and the middle of the log scale (0.5·√2) to 0.6.
func TestR5_FactorNarrowsAtTheCap(t *testing.T) {
	b := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	for _, tc := range []struct {
		attempt int
		f       float64
		want    time.Duration
	}{
		{1, 0.5, 5 * time.Second}, {1, 1, 10 * time.Second}, {4, 0.75, 60 * time.Second}, {4, 1, 80 * time.Second},
		{5, 0.5, 60 * time.Second}, {5, 0.5 * math.Exp2(0.5), 72 * time.Second}, {5, 1, 84 * time.Second}, {40, 1, 84 * time.Second},
		{2, 0, 15 * time.Second}, // no factor yet: the middle of the range
	} {
		if got := Delay(b, tc.attempt, tc.f); got != tc.want {
			t.Errorf("Delay(attempt %d, factor %v) = %s, want %s", tc.attempt, tc.f, got, tc.want)
		}
	}
}

// TestR5_DelayBoundsProperty: whatever the contract, attempt and factor,
// the local delay is within [50 %, 100 %] of raw.
func TestR5_DelayBoundsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "base"))
		b := pollwarden.Backoff{Base: base, Max: base + time.Duration(rapid.Int64Range(0, int64(24*time.Hour)).Draw(t, "extra"))}
		attempt := rapid.IntRange(0, 100).Draw(t, "attempt")
		f := DrawFactor(fixedRand(rapid.Float64Range(0, 0.9999999).Draw(t, "u")))
		raw, d := RawDelay(b, attempt), Delay(b, attempt, f)
		if d < raw/2 || d > raw {
			t.Fatalf("delay %s outside [%s, %s] (factor %v)", d, raw/2, raw, f)
		}
	})
}

// TestR5_R6_R7_ScheduleBoundsProperty drives Decide with pending answers,
// Retry-After and hints from any point of an operation's life: a local
// delay stays in [50 %, 100 %] of raw, Retry-After and a hint are
// minimums, and no next poll is ever at or past the deadline.
func TestR5_R6_R7_ScheduleBoundsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := testContract()
		c.Limits.MaxStatusRequests = 1000
		c.Limits.MaxTransportFailures, c.Limits.MaxRateLimited = 1000, 1000
		op, _, err := NewOperation(c, NewParams{ID: "p", ProviderJobID: "j", Rand: seeded(rapid.Uint64().Draw(t, "seed"))}, t0)
		if err != nil {
			t.Fatal(err)
		}
		op.CompletedPolls = rapid.IntRange(0, 30).Draw(t, "polls")
		now := t0.Add(time.Duration(rapid.Int64Range(0, int64(39*time.Minute)).Draw(t, "elapsed")))
		op.NextPollAt = now // due now, not late (late wake-ups: TestR9_…)
		if g := Gate(op, c, now); g.Verdict != Send {
			t.Fatalf("gate verdict %d, want Send", g.Verdict)
		}
		res, _ := CountRequest(op, c, now)
		var obs *pollwarden.Observation
		var minWait time.Duration
		switch kind := rapid.SampledFrom([]string{"pending", "retry-after", "hint"}).Draw(t, "kind"); kind {
		case "pending":
			obs = obs200("running", nil)
		case "retry-after":
			s := rapid.IntRange(0, 3000).Draw(t, "ra")
			obs, minWait = obsCode(rapid.SampledFrom([]int{429, 503}).Draw(t, "code"), strconv.Itoa(s)), time.Duration(s)*time.Second
		case "hint":
			s := rapid.IntRange(0, 3000).Draw(t, "hint")
			obs, minWait = obs200("running", func(b *pollwarden.BodyFacts) { b.PollAfter = float64(s) }), time.Duration(s)*time.Second
		}
		st := Decide(res, c, obs, now, seeded(1))
		if obs.Status == 200 && minWait > 0 && !now.Add(minWait).Before(res.DeadlineAt) {
			// A hint past the deadline is rejected and recorded (R6);
			// the backoff applies instead.
			if !hasEvent(st.Events, pollwarden.EventHintRejected) {
				t.Fatal("a hint past the deadline was not recorded as rejected")
			}
			minWait = 0
		}
		if st.Op.Phase != pollwarden.PhaseWaiting {
			if st.Op.Reason != pollwarden.ReasonDeadlineExceeded && st.Op.Reason != pollwarden.ReasonRequestBudgetExhausted {
				t.Fatalf("stopped with %s", st.Op.Reason)
			}
			return
		}
		wait := st.Op.NextPollAt.Sub(now)
		if !st.Op.NextPollAt.Before(st.Op.DeadlineAt) {
			t.Fatalf("next poll %s at or past the deadline %s", st.Op.NextPollAt, st.Op.DeadlineAt)
		}
		if wait < minWait {
			t.Fatalf("waits %s, below the provider's minimum %s (source %s)", wait, minWait, st.Op.NextPollSource)
		}
		if st.Op.NextPollSource == pollwarden.DelayLocalBackoff {
			raw := RawDelay(c.Backoff, st.Op.CompletedPolls)
			if wait < raw/2 || wait > raw {
				t.Fatalf("local delay %s outside [%s, %s]", wait, raw/2, raw)
			}
		}
	})
}

// TestR8_RateLimitedWindowIsFourToEightTimesRaw: after a bare 429 the
// delay is drawn between 4× and 8× the raw delay, capped by max.
func TestR8_RateLimitedWindowIsFourToEightTimesRaw(t *testing.T) {
	b := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	for _, tc := range []struct {
		attempt int
		u       float64
		want    time.Duration
	}{
		{0, 0, 20 * time.Second}, {0, 0.5, 30 * time.Second}, {0, 1, 40 * time.Second},
		{1, 0, 40 * time.Second}, {1, 1, 80 * time.Second},
		{2, 0, 80 * time.Second}, {2, 1, 120 * time.Second}, // 8×20 s capped
		{5, 0, 120 * time.Second}, {5, 1, 120 * time.Second},
	} {
		if got := RateLimitedDelay(b, tc.attempt, fixedRand(tc.u)); got != tc.want {
			t.Errorf("RateLimitedDelay(attempt %d, u %v) = %s, want %s", tc.attempt, tc.u, got, tc.want)
		}
	}
}

// TestR5_CappedFactorIsABellInItsRange: the capped factor grows with the
// factor, stays in [0.5, 0.7], and is steepest at the ends, so drawn
// factors pile up in the middle of the capped range, not at its edges
// (no hard wave edge for capped delays).
func TestR5_CappedFactorIsABellInItsRange(t *testing.T) {
	prev := 0.0
	for i := 0; i <= 1000; i++ {
		g := CappedFactor(0.5 * math.Exp2(float64(i)/1000))
		if g < FactorMin || g > CappedFactorMax || g < prev {
			t.Fatalf("CappedFactor at u = %v: %v (previous %v), want non-decreasing in [0.5, 0.7]", float64(i)/1000, g, prev)
		}
		prev = g
	}
	r := seeded(3)
	const n = 100000
	var ends, middle int
	for range n {
		switch g := CappedFactor(DrawFactor(r)); {
		case g < 0.52 || g > 0.68:
			ends++
		case g >= 0.59 && g < 0.61:
			middle++
		}
	}
	// A flat map would put 20 % of draws in the outer tenths and 10 % in
	// the middle one; the sine bell puts about 4.9 % and 15.6 % there.
	if ends > n*7/100 || middle < n*14/100 {
		t.Errorf("%d of %d capped factors in the outer tenths, %d in the middle one: not a bell", ends, n, middle)
	}
}
