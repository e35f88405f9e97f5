package pollwarden

import (
	"fmt"
	"time"
)

// ParseDeadline reads a deadline as every door accepts it: a positive Go
// duration from now ("40m", "1h30m") or an RFC 3339 time in the future
// ("2026-12-01T12:00:00Z", "…+02:00"). field is how the door names the
// input ("deadline", "--deadline"), so the error says where the problem
// is. Whether the deadline is within the contract's is the core's check.
func ParseDeadline(field, s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, Refuse(ErrInvalid, "deadline", "%s %s must be positive", field, quoteValue(s))
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, Refuse(ErrInvalid, "deadline", "%s %s is neither a duration (40m) nor an RFC 3339 time", field, quoteValue(s))
	}
	if !t.After(now) {
		return time.Time{}, Refuse(ErrInvalid, "deadline", "%s %s is not in the future", field, quoteValue(s))
	}
	return t, nil
}

// quoteValue quotes a caller's value for a message, shortened so that a
// long one does not drown the problem.
func quoteValue(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
