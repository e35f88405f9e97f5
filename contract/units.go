package contract

import (
	"math"
	"time"

	"github.com/pollwarden/pollwarden"
)

// delayIn turns a delay hint written in unit into seconds, the form the
// decision core reads. A value of the wrong type is passed on unchanged,
// so the core rejects it with its own message and the rejection is
// recorded.
func delayIn(v any, unit pollwarden.HintUnit) any {
	switch unit {
	case pollwarden.UnitMilliseconds:
		if f, ok := v.(float64); ok {
			return f / 1000
		}
	case pollwarden.UnitDuration:
		if s, ok := v.(string); ok {
			if d, err := time.ParseDuration(s); err == nil {
				return d.Seconds()
			}
		}
	}
	return v
}

// timeIn turns a time hint written in unit into RFC 3339. As for delayIn,
// a value that does not fit the unit is passed on for the core to reject.
func timeIn(v any, unit pollwarden.HintUnit) any {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e15 {
		return v
	}
	var t time.Time
	switch unit {
	case pollwarden.UnitUnixSeconds:
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	case pollwarden.UnitUnixMilliseconds:
		t = time.UnixMilli(int64(f))
	default:
		return v
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// relativeExpiry is a relative expiry (MCP's createdAt + ttl): the time
// at plus the delay after, in seconds, as RFC 3339. No delay (null: MCP's
// unlimited ttl) means no expiry; a time or a delay that does not parse
// is passed on for the core to reject.
func relativeExpiry(at, after any) any {
	if after == nil {
		return nil
	}
	s, ok := at.(string)
	if !ok {
		return at
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return at
	}
	sec, ok := after.(float64)
	if !ok || math.IsNaN(sec) || sec < 0 || sec > 1e12 {
		return after
	}
	return t.Add(time.Duration(sec * float64(time.Second))).UTC().Format(time.RFC3339Nano)
}
