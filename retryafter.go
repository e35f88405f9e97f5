package pollwarden

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter bounds a provider's Retry-After or poll hint so arithmetic
// cannot overflow; anything this long passes every deadline anyway.
const MaxRetryAfter = 100 * 365 * 24 * time.Hour

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
			return 0, fmt.Errorf("Retry-After %q is not a non-negative integer", clipValue(s))
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return MaxRetryAfter, nil
			}
			return 0, fmt.Errorf("Retry-After %q is not a number of seconds or an HTTP date", clipValue(s))
		}
		if n > uint64(MaxRetryAfter/time.Second) || n > math.MaxInt64/uint64(time.Second) {
			return MaxRetryAfter, nil
		}
		return time.Duration(n) * time.Second, nil
	}
	t, err := parseHTTPDate(s)
	if err != nil {
		return 0, fmt.Errorf("Retry-After %q is not a number of seconds or an HTTP date", clipValue(s))
	}
	if d := t.Sub(now); d > 0 {
		return min(d, MaxRetryAfter), nil // Sub saturates far in the future
	}
	return 0, nil
}

// httpDates are the three forms RFC 9110 lets a recipient accept, in the
// order net/http's ParseTime tries them; parsing here keeps the root
// package (and policy above it) clear of net/http.
var httpDates = [...]string{"Mon, 02 Jan 2006 15:04:05 GMT", time.RFC850, time.ANSIC}

// parseHTTPDate reads an HTTP date in any of the three forms.
func parseHTTPDate(s string) (t time.Time, err error) {
	for _, layout := range httpDates {
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return t, err
}

// clipValue cuts a provider's value for an error message between
// characters, as display.Cut does (the root package links nothing of the
// module's own, so it cannot call it).
func clipValue(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}
