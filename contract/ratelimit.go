package contract

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// rateLimit decodes rate_limit: the answers besides 429 that mean "rate
// limited", and the header that says when the limit resets.
func (d *decoder) rateLimit(o *object) *pollwarden.RateLimitSpec {
	if !o.present {
		return nil
	}
	rl := &pollwarden.RateLimitSpec{}
	for _, it := range o.list("when") {
		so := d.object(it.path, it.line, it.node, []string{"status", "header", "equals"})
		if so.bad {
			if !so.present && isNull(it.node) {
				d.addf(it.line, it.path, "must be a mapping {status, header, equals}")
			}
			continue
		}
		sig := pollwarden.RateLimitSignal{Status: so.integer("status", 0, 1)}
		if sig.Status != 0 && sig.Status != 400 && sig.Status != 403 && sig.Status != 429 && sig.Status != 503 {
			d.addf(so.lineOf("status"), so.child("status"), "a rate limit is signalled with 400, 403, 429 or 503, got %d", sig.Status)
		}
		if sig.Status == 0 {
			so.get("status", true)
		}
		if h, line, ok := so.str("header", true); ok {
			if !isToken(h) {
				d.addf(line, so.child("header"), "must be a header name, got %s", clip(h))
			}
			sig.Header = h
		}
		if v, _, ok := so.str("equals", false); ok {
			sig.Equals, sig.HasEquals = v, true
		}
		rl.When = append(rl.When, sig)
	}
	if len(rl.When) == 0 {
		d.addf(o.lineOf("when"), o.child("when"), "must list at least one signal {status, header, equals}")
	}
	ro := o.obj("reset", false, "header", "unit")
	if ro.present {
		if h, line, ok := ro.str("header", true); ok {
			if !isToken(h) {
				d.addf(line, ro.child("header"), "must be a header name, got %s", clip(h))
			}
			rl.ResetHeader = h
		}
		rl.ResetUnit = pollwarden.UnitUnixSeconds
		if u, line, ok := ro.str("unit", false); ok {
			switch unit := pollwarden.HintUnit(u); unit {
			case pollwarden.UnitUnixSeconds, pollwarden.UnitUnixMilliseconds, pollwarden.UnitRFC3339, pollwarden.UnitSeconds:
				rl.ResetUnit = unit
			default:
				d.addf(line, ro.child("unit"), "must be unix_seconds, unix_milliseconds, rfc3339 or seconds, got %s", clip(u))
			}
		}
	}
	return rl
}

// RateLimited says whether an answer other than 429 is a rate limit under
// the contract's rate_limit signals, and why ("" when it is not).
func RateLimited(c *pollwarden.Contract, status int, headers map[string]string) string {
	if c == nil || c.RateLimit == nil {
		return ""
	}
	for _, s := range c.RateLimit.When {
		v, ok := headers[strings.ToLower(s.Header)]
		if s.Status != status || !ok || (s.HasEquals && v != s.Equals) {
			continue
		}
		if s.HasEquals {
			return fmt.Sprintf("%d with %s %s", status, s.Header, v)
		}
		return fmt.Sprintf("%d with %s", status, s.Header)
	}
	return ""
}

// ResetAfter writes the contract's rate-limit reset header as a
// Retry-After value (an HTTP date, or seconds), "" when it is absent or
// unreadable, so the decision core reads it like any Retry-After.
func ResetAfter(c *pollwarden.Contract, headers map[string]string, now time.Time) string {
	if c == nil || c.RateLimit == nil || c.RateLimit.ResetHeader == "" {
		return ""
	}
	v, ok := headers[strings.ToLower(c.RateLimit.ResetHeader)]
	if !ok {
		return ""
	}
	var t time.Time
	switch c.RateLimit.ResetUnit {
	case pollwarden.UnitSeconds:
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			return strconv.FormatUint(n, 10)
		}
		return ""
	case pollwarden.UnitRFC3339:
		p, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return ""
		}
		t = p
	default:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1e15 {
			return ""
		}
		if c.RateLimit.ResetUnit == pollwarden.UnitUnixMilliseconds {
			f /= 1000
		}
		t = time.Unix(int64(math.Ceil(f)), 0)
	}
	if !t.After(now) {
		return "0"
	}
	return t.UTC().Format(http.TimeFormat)
}
