package contract

import (
	"encoding/json"
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
		so := d.object(it.path, it.line, it.node, []string{"status", "header", "path", "equals"})
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
		if h, line, ok := so.str("header", false); ok {
			if !isToken(h) {
				d.addf(line, so.child("header"), "must be a header name, got %s", clip(h))
			}
			sig.Header = h
		}
		sig.Path = d.optPath(so, "path")
		if (sig.Header == "") == (sig.Path == "") && !so.bad {
			d.addf(so.line, it.path, "give exactly one of header (a response header) and path (a JMESPath over the body)")
		}
		if v, _, ok := so.str("equals", false); ok {
			sig.Equals, sig.HasEquals = v, true
		}
		rl.When = append(rl.When, sig)
	}
	if _, ok := o.get("retry_after", false); ok {
		p, unit := d.hint(o, "retry_after", []pollwarden.HintUnit{pollwarden.UnitSeconds, pollwarden.UnitMilliseconds, pollwarden.UnitDuration})
		rl.RetryAfterPath, rl.RetryAfterUnit = p, unit
	}
	// A reset alone is enough: it says when a 429 (always a rate limit)
	// resets, and when a quota's remaining count renews.
	if len(rl.When) == 0 && rl.RetryAfterPath == "" && !o.has("retry_after") && !o.has("reset") {
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
// the contract's header signals, and why ("" when it is not). Body signals
// need the compiled paths: Loaded.RateLimit checks both.
func RateLimited(c *pollwarden.ContractSpec, status int, headers map[string]string) string {
	return rateLimited(c, status, headers, nil)
}

// rateLimited checks every signal; body, when not nil, reads a path signal.
func rateLimited(c *pollwarden.ContractSpec, status int, headers map[string]string, body func(path string) (string, bool)) string {
	if c == nil || c.RateLimit == nil {
		return ""
	}
	for _, s := range c.RateLimit.When {
		if s.Status != status {
			continue
		}
		name := s.Header
		v, ok := headers[strings.ToLower(s.Header)]
		if s.Path != "" {
			if body == nil {
				continue
			}
			name = s.Path
			v, ok = body(s.Path)
		}
		if !ok || (s.HasEquals && v != s.Equals) {
			continue
		}
		if s.Path != "" {
			name, v = clip(name), clip(v)
		}
		if s.HasEquals {
			return fmt.Sprintf("%d with %s %s", status, name, v)
		}
		return fmt.Sprintf("%d with %s", status, name)
	}
	return ""
}

// ResetAfter writes the contract's rate-limit reset header as a
// Retry-After value (an HTTP date, or seconds), "" when it is absent or
// unreadable, so the decision core reads it like any Retry-After.
func ResetAfter(c *pollwarden.ContractSpec, headers map[string]string, now time.Time) string {
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

// RateLimit reads a rate-limited answer: why an answer other than 429 is
// one under the contract's signals ("" when it is not), and, for it or a
// 429, the wait the contract's reset header or body retry_after path gives
// as a Retry-After value ("" when none). The body is untrusted: a path that
// fails gives nothing.
func (x *Loaded) RateLimit(status int, headers map[string]string, body []byte, now time.Time) (why, retryAfter string) {
	rl := x.c.RateLimit
	if rl == nil {
		return "", ""
	}
	var doc any
	parsed := false
	read := func(expr string) (any, bool) {
		if !parsed {
			parsed = true
			if json.Unmarshal(body, &doc) != nil {
				doc = nil
			}
		}
		jp := x.rlPaths[expr]
		if jp == nil || doc == nil {
			return nil, false
		}
		v, err := search(jp, doc)
		return v, err == nil && v != nil
	}
	if status != http.StatusTooManyRequests {
		why = rateLimited(x.c, status, headers, func(expr string) (string, bool) {
			v, ok := read(expr)
			if !ok {
				return "", false
			}
			return rawText(v), true
		})
		if why == "" {
			return "", ""
		}
	}
	retryAfter = ResetAfter(x.c, headers, now)
	if retryAfter == "" && rl.RetryAfterPath != "" {
		if v, ok := read(rl.RetryAfterPath); ok {
			if f, isNum := delayIn(v, rl.RetryAfterUnit).(float64); isNum && f >= 0 && f < 1e9 {
				retryAfter = strconv.FormatInt(int64(math.Ceil(f)), 10)
			}
		}
	}
	return why, retryAfter
}
