package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// hintWait validates the provider's poll hints (R6) and returns the wait
// they ask for. ok is false when no usable hint was given; rejected lists
// every hint that was present but refused, with why, so the rejection can
// be recorded. When both hints are valid the later time wins: the provider
// asked not to be asked before either.
func hintWait(pollAfter, nextCheckAt any, now, deadline time.Time) (wait time.Duration, ok bool, rejected []string) {
	if pollAfter != nil {
		d, err := pollAfterDuration(pollAfter)
		switch {
		case err != nil:
			rejected = append(rejected, "poll_after_seconds: "+err.Error())
		case !now.Add(d).Before(deadline):
			rejected = append(rejected, fmt.Sprintf("poll_after_seconds: %s passes the deadline", d))
		default:
			wait, ok = d, true
		}
	}
	if nextCheckAt != nil {
		t, err := nextCheckTime(nextCheckAt)
		switch {
		case err != nil:
			rejected = append(rejected, "next_check_at: "+err.Error())
		case !t.Before(deadline):
			rejected = append(rejected, fmt.Sprintf("next_check_at: %s passes the deadline", t.UTC().Format(time.RFC3339)))
		default:
			d := max(t.Sub(now), 0)
			if !ok || d > wait {
				wait = d
			}
			ok = true
		}
	}
	return wait, ok, rejected
}

func pollAfterDuration(v any) (time.Duration, error) {
	f, isNum := v.(float64)
	if !isNum {
		return 0, fmt.Errorf("want a number of seconds, got %s", typeName(v))
	}
	if math.IsNaN(f) || f < 0 {
		return 0, fmt.Errorf("negative value %v", f)
	}
	if f > pollwarden.MaxRetryAfter.Seconds() {
		return pollwarden.MaxRetryAfter, nil
	}
	return time.Duration(f * float64(time.Second)), nil
}

func nextCheckTime(v any) (time.Time, error) {
	s, isStr := v.(string)
	if !isStr {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time, got %s", typeName(v))
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("unparseable time %s", display.Clip(s))
	}
	return t, nil
}

// expiryTime reads the provider's job expiry (hints.job_expires_at).
func expiryTime(v any) (time.Time, error) { return nextCheckTime(v) }

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
