package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The bounds of a quota block: a window from a second to a month, at
// most a million requests in it, and never more than a thousand a second
// (the spacing of grants, Per/Requests, stays at least a millisecond).
const (
	MinQuotaPer      = time.Second
	MaxQuotaPer      = 31 * 24 * time.Hour
	MaxQuotaRequests = 1_000_000
	MinQuotaSpacing  = time.Millisecond
)

// quota decodes the quota block: the shared quota of the contract's key
// (pollwarden.QuotaKey).
func (d *decoder) quota(o *object) *pollwarden.QuotaSpec {
	if !o.present {
		return nil
	}
	q := &pollwarden.QuotaSpec{Key: pollwarden.QuotaKeyCredential}
	// requests and per go together; both may be left out only when the
	// provider's own count is read (remaining_header): the quota is then
	// what the provider says, nothing declared.
	_, learned := o.get("remaining_header", false)
	need := !learned || o.has("requests") || o.has("per")
	if _, ok := o.get("requests", need); ok {
		q.Requests = o.integer("requests", 0, 1)
		if q.Requests > MaxQuotaRequests {
			v, _ := o.get("requests", false)
			d.addf(v.Line, o.child("requests"), "must be at most %d, got %s", MaxQuotaRequests, clip(v.Value))
			q.Requests = 0
		}
	}
	if _, ok := o.get("per", need); ok {
		per, ok := o.duration("per", 0, false)
		v, _ := o.get("per", false)
		switch {
		case !ok:
		case per < MinQuotaPer:
			d.addf(v.Line, o.child("per"), "must be at least %s, got %s", MinQuotaPer, clip(v.Value))
			per = 0
		case per > MaxQuotaPer:
			d.addf(v.Line, o.child("per"), "must be at most %s (31 days), got %s", pollwarden.ShortDuration(MaxQuotaPer), clip(v.Value))
			per = 0
		}
		q.Per = per
	}
	if q.Requests > 0 && q.Per > 0 && q.Per/time.Duration(q.Requests) < MinQuotaSpacing {
		d.addf(o.lineOf("requests"), o.child("requests"), "%d requests per %s is more than one each %s; lower requests or lengthen per",
			q.Requests, pollwarden.ShortDuration(q.Per), MinQuotaSpacing)
	}
	if k, line, ok := o.str("key", false); ok {
		switch k {
		case pollwarden.QuotaKeyCredential, pollwarden.QuotaKeyContract:
			q.Key = k
		default:
			d.addf(line, o.child("key"), "must be credential or contract, got %s", clip(k))
		}
	}
	if h, line, ok := o.str("remaining_header", false); ok {
		if !isToken(h) {
			d.addf(line, o.child("remaining_header"), "must be a header name, got %s", clip(h))
		}
		q.RemainingHeader = h
	}
	return q
}

// QuotaFacts reads an answer's quota headers under c: the remaining
// count as sent, and the rate_limit.reset header as a wait after now
// (the answer's arrival). A reset that cannot be read, or that is not
// after now, is reported in ResetProblem and not used.
func QuotaFacts(c *pollwarden.ContractSpec, headers map[string]string, now time.Time) pollwarden.QuotaFacts {
	var f pollwarden.QuotaFacts
	if c == nil || c.Quota == nil || c.Quota.RemainingHeader == "" {
		return f
	}
	f.Remaining, f.HasRemaining = headers[strings.ToLower(c.Quota.RemainingHeader)]
	if c.RateLimit == nil || c.RateLimit.ResetHeader == "" {
		return f
	}
	name := c.RateLimit.ResetHeader
	v, ok := headers[strings.ToLower(name)]
	if !ok {
		return f
	}
	in, err := resetIn(c.RateLimit.ResetUnit, v, now)
	switch {
	case err != nil:
		f.ResetProblem = fmt.Sprintf("%s %s: %v", name, clip(v), err)
	case in <= 0:
		f.ResetProblem = fmt.Sprintf("%s %s is not after the answer", name, clip(v))
	default:
		f.ResetIn, f.HasReset = in, true
	}
	return f
}

// resetIn reads a reset header's value in unit as a wait after now;
// pollwarden.MaxRetryAfter bounds it.
func resetIn(unit pollwarden.HintUnit, v string, now time.Time) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch unit {
	case pollwarden.UnitSeconds:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not a whole number of seconds")
		}
		return time.Duration(min(n, uint64(pollwarden.MaxRetryAfter/time.Second))) * time.Second, nil
	case pollwarden.UnitRFC3339:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return 0, fmt.Errorf("not an RFC 3339 time")
		}
		return min(t.Sub(now), pollwarden.MaxRetryAfter), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != f || f < 0 || f > 1e15 {
		return 0, fmt.Errorf("not a unix time")
	}
	if unit == pollwarden.UnitUnixMilliseconds {
		f /= 1000
	}
	return min(time.Unix(int64(f), int64((f-float64(int64(f)))*1e9)).Sub(now), pollwarden.MaxRetryAfter), nil
}
