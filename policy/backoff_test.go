package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

func TestR5_RawDelay(t *testing.T) {
	b := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	for attempt, want := range map[int]time.Duration{
		0: 5 * time.Second, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second,
		4: 80 * time.Second, 5: 120 * time.Second, 6: 120 * time.Second, 1000: 120 * time.Second, -1: 5 * time.Second,
	} {
		if got := RawDelay(b, attempt); got != want {
			t.Errorf("RawDelay(attempt %d) = %s, want %s", attempt, got, want)
		}
	}
}

func TestR5_JitterIsHalfToFullRaw(t *testing.T) {
	raw := 40 * time.Second
	for _, c := range []struct {
		r    float64
		want time.Duration
	}{{0, 20 * time.Second}, {0.5, 30 * time.Second}, {0.999999999, 40 * time.Second}} {
		got := Jitter(raw, fixedRand(c.r))
		if got.Round(time.Millisecond) != c.want {
			t.Errorf("Jitter(%s, %v) = %s, want %s", raw, c.r, got, c.want)
		}
	}
}

func TestR5_BackoffBoundsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "base"))
		maxD := base + time.Duration(rapid.Int64Range(0, int64(24*time.Hour)).Draw(t, "extra"))
		attempt := rapid.IntRange(0, 200).Draw(t, "attempt")
		b := pollwarden.Backoff{Base: base, Max: maxD}
		raw := RawDelay(b, attempt)
		if raw < base || raw > maxD {
			t.Fatalf("raw %s outside [base %s, max %s]", raw, base, maxD)
		}
		if attempt < 40 {
			want := base << attempt
			if want/base != 1<<attempt || want > maxD { // overflow or capped
				want = maxD
			}
			if raw != want {
				t.Fatalf("raw %s, want min(max, base·2^%d) = %s", raw, attempt, want)
			}
		}
		d := Jitter(raw, seeded(rapid.Uint64().Draw(t, "seed")))
		if d < raw/2 || d > raw {
			t.Fatalf("delay %s outside [%s, %s]", d, raw/2, raw)
		}
	})
}

func TestR8_RateLimitedDelayIsAtLeastFourTimesRaw(t *testing.T) {
	b := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	for attempt, wantLo := range map[int]time.Duration{1: 40 * time.Second, 2: 80 * time.Second, 3: 120 * time.Second, 9: 120 * time.Second} {
		for _, r := range []float64{0, 0.5, 0.9999} {
			d := RateLimitedDelay(b, attempt, fixedRand(r))
			if d < wantLo || d > b.Max {
				t.Errorf("attempt %d r %v: delay %s, want in [%s, %s]", attempt, r, d, wantLo, b.Max)
			}
		}
	}
}
