package policy

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// RawDelay is R5's raw delay: min(max, base·2^attempt), where attempt is
// the number of completed polls. Computed without overflow for any attempt.
func RawDelay(b pollwarden.Backoff, attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	d := b.Base
	for i := 0; i < attempt; i++ {
		if d >= b.Max || d > b.Max/2 {
			return b.Max
		}
		d *= 2
	}
	return min(d, b.Max)
}

// The per-operation jitter factor of R5 lies in [FactorMin, FactorMax].
const (
	FactorMin = 0.5
	FactorMax = 1.0
	// CappedFactorMax bounds the factor once the raw delay has reached
	// backoff.max: the factor is mapped linearly from [0.5, 1] into
	// [0.5, 0.7]. By then the operations have long since spread out, and
	// the longest delay alone sets how late the end of a long job is seen:
	// in the herd this takes the detection lag p99 from 103 s to 74 s
	// (docs/decisions.md, "Scheduling").
	CappedFactorMax = 0.7
)

// DrawFactor draws an operation's jitter factor, uniform in [0.5, 1]
// (R5: "uniform in [50 %, 100 %] of raw, drawn per operation"). It is
// drawn once, when the operation is created, and kept on the record, so a
// restart does not redraw it. One factor per operation, rather than one
// per delay, keeps each operation's polls at a fixed fraction of the raw
// schedule: a herd started together spreads into flat waves instead of
// the peaked sums of independent uniforms.
func DrawFactor(r Rand) float64 {
	return FactorMin + (FactorMax-FactorMin)*r.Float64()
}

// ValidFactor reports whether f can be an operation's jitter factor. A
// record written before the factor was kept has 0 here.
func ValidFactor(f float64) bool { return f >= FactorMin && f <= FactorMax }

// Delay is R5's actual delay for an operation whose jitter factor is f:
// f·raw while raw is below backoff.max, and, once raw has reached it, the
// same factor mapped into [0.5, CappedFactorMax]. Both stay within
// [50 %, 100 %] of raw. An invalid factor (an old record) counts as the
// middle of the range until Decide gives the record its own.
func Delay(b pollwarden.Backoff, attempt int, f float64) time.Duration {
	if !ValidFactor(f) {
		f = (FactorMin + FactorMax) / 2
	}
	raw := RawDelay(b, attempt)
	if raw >= b.Max {
		f = FactorMin + (f-FactorMin)*(CappedFactorMax-FactorMin)/(FactorMax-FactorMin)
	}
	return time.Duration(f * float64(raw))
}

// Jitter draws a delay uniformly in [raw/2, raw]: R5's bounds with a fresh
// draw. The decision core uses the per-operation factor (Delay); Jitter
// remains for models that draw per delay (Brooker's Equal Jitter).
func Jitter(raw time.Duration, r Rand) time.Duration {
	half := raw / 2
	return half + time.Duration(r.Float64()*float64(raw-half))
}

// RateLimitedLow and RateLimitedHigh bound R8's delay after a 429 without
// Retry-After, in multiples of the current raw delay (before the cap).
const (
	RateLimitedLow  = 4
	RateLimitedHigh = 8
)

// RateLimitedDelay is R8's delay after a 429 without Retry-After: drawn
// uniformly between four and eight times the current raw delay, capped by
// max. R8 asks for at least 4×; the wide window sends a herd pushed back by
// a rate limit back spread out, not as a copy of the burst that was
// refused (in the rate-limit scenario, escalations 29 % → 0 %).
func RateLimitedDelay(b pollwarden.Backoff, attempt int, r Rand) time.Duration {
	raw := RawDelay(b, attempt)
	lo := min(RateLimitedLow*raw, b.Max)
	hi := min(RateLimitedHigh*raw, b.Max)
	return lo + time.Duration(r.Float64()*float64(hi-lo))
}
