package policy

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds a delta-seconds value so arithmetic cannot overflow;
// anything this long passes every deadline anyway.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// ParseRetryAfter reads an RFC 9110 Retry-After value as a minimum wait
// from now (R7). It accepts delta-seconds and the three HTTP-date formats
// (IMF-fixdate, RFC 850, asctime). A date in the past means no wait. A
// negative number, a fraction or garbage is an error that names the value,
// so the caller can record the rejection.
func ParseRetryAfter(v string, now time.Time) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return 0, errors.New("empty Retry-After")
	}
	if s[0] >= '0' && s[0] <= '9' || s[0] == '-' || s[0] == '+' {
		if s[0] == '-' || s[0] == '+' {
			return 0, fmt.Errorf("Retry-After %q is not a non-negative integer", clip(s))
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return maxRetryAfter, nil
			}
			return 0, fmt.Errorf("Retry-After %q is not a number of seconds or an HTTP date", clip(s))
		}
		if n > uint64(maxRetryAfter/time.Second) || n > math.MaxInt64/uint64(time.Second) {
			return maxRetryAfter, nil
		}
		return time.Duration(n) * time.Second, nil
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return 0, fmt.Errorf("Retry-After %q is not a number of seconds or an HTTP date", clip(s))
	}
	if d := t.Sub(now); d > 0 {
		return min(d, maxRetryAfter), nil // Sub saturates far in the future
	}
	return 0, nil
}

// clip keeps error messages short whatever a provider sends.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
