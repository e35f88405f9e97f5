package pollwarden

import "time"

// Upper bounds on every limit, wherever it comes from: a contract's limits
// and extension, an operation's limits and deadline at creation (any door,
// any role), and every addition an extension makes. Without them a budget
// of 9223372036854775807 plus an extension wraps to a negative number.
// They are far above any real use (a million status requests is one every
// 30 s for a year) and far below any overflow.
const (
	// MaxCount bounds every count: status requests, transport failures
	// and rate-limited answers allowed, and an extension's requests.
	MaxCount = 1_000_000
	// MaxSpan bounds every span of time: a deadline from the moment it is
	// set (a contract's, or one given at creation) and an extension's
	// time. 366 days: a year, leap or not.
	MaxSpan = 366 * 24 * time.Hour
)

// AddCount is a + n for a count limit, saturating at MaxCount: an
// extension never makes a budget negative, nor smaller than it was (a
// stored value already above MaxCount is kept as it is).
func AddCount(a, n int) int {
	switch {
	case n <= 0:
		return a
	case a >= MaxCount-n:
		return max(a, MaxCount)
	}
	return a + n
}
