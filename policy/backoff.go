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

// Jitter draws the actual delay uniformly in [raw/2, raw] (R5): the lower
// half is cut off so that no run degenerates into near-zero retries.
func Jitter(raw time.Duration, r Rand) time.Duration {
	half := raw / 2
	return half + time.Duration(r.Float64()*float64(raw-half))
}

// RateLimitedDelay is R8's delay after a 429 without Retry-After: at least
// four times the current raw delay and up to five times, capped by max, so
// that rate-limited clients back off sharply but still spread out.
func RateLimitedDelay(b pollwarden.Backoff, attempt int, r Rand) time.Duration {
	raw := RawDelay(b, attempt)
	lo := min(4*raw, b.Max)
	hi := min(5*raw, b.Max)
	return lo + time.Duration(r.Float64()*float64(hi-lo))
}
