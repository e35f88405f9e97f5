package policy

import (
	"math"
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
	// backoff.max: the factor is mapped from [0.5, 1] into [0.5, 0.7]
	// (CappedFactor). By then the operations have long since spread out, and
	// the longest delay alone sets how late the end of a long job is seen:
	// in the herd this takes the detection lag p99 from 103 s to 74 s
	// (docs/decisions.md, "Scheduling").
	CappedFactorMax = 0.7
)

// DrawFactor draws an operation's jitter factor, log-uniformly in
// [0.5, 1): f = 0.5·2^u with u uniform in [0, 1). R5 fixes the range and
// leaves the distribution to measurements. It is drawn once, when the
// operation is created, and kept on the record, so a restart does not
// redraw it. With one factor per operation the k-th polls of a herd
// started together fall at f·S_k (S_k the sum of the first k raw delays);
// a log-uniform f gives every such wave the density N/(t·ln 2), so
// consecutive waves meet at the same height instead of in steps of two,
// which is what kept a uniform factor's herd burstiness above 1.5 on half
// the seeds (docs/decisions.md, "Scheduling").
func DrawFactor(r Rand) float64 {
	return FactorMin * math.Exp2(r.Float64())
}

// ValidFactor reports whether f can be an operation's jitter factor. A
// record written before the factor was kept has 0 here.
func ValidFactor(f float64) bool { return f >= FactorMin && f <= FactorMax }

// Delay is R5's actual delay for an operation whose jitter factor is f:
// f·raw while raw is below backoff.max, and, once raw has reached it, the
// same factor mapped into [0.5, CappedFactorMax] (CappedFactor). Both stay
// within [50 %, 100 %] of raw. An invalid factor (an old record) counts as
// the middle of the range until Decide gives the record its own.
func Delay(b pollwarden.Backoff, attempt int, f float64) time.Duration {
	if !ValidFactor(f) {
		f = (FactorMin + FactorMax) / 2
	}
	raw := RawDelay(b, attempt)
	if raw >= b.Max {
		f = CappedFactor(f)
	}
	return time.Duration(f * float64(raw))
}

// CappedFactor maps an operation's factor f in [0.5, 1] to the factor it
// uses once raw has reached backoff.max, in [0.5, CappedFactorMax]:
// 0.5 + 0.2·(1/2 + asin(2u−1)/π) with u = log2(2f), uniform for a drawn
// factor. Below the cap a herd's waves are separated by a gap no R5
// schedule can close, so hard wave edges (a flat u) are best; at the cap
// the waves overlap, and a hard edge is a step in the request rate. This
// map is steepest at both ends, so each capped wave fades in and out (its
// factor's density is a sine bell) and the overlapping waves add up
// without steps: herd burstiness at n = 100,000 1.50–1.52 → 1.41–1.45
// against the linear map (docs/decisions.md, "Scheduling").
func CappedFactor(f float64) float64 {
	u := min(max(math.Log2(f/FactorMin), 0), 1)
	return FactorMin + (CappedFactorMax-FactorMin)*(0.5+math.Asin(2*u-1)/math.Pi)
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
