package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// MaxKeyHold bounds how long one answer may hold a whole key: a reset or
// Retry-After further ahead (a broken or lying header) is cut to it,
// with a reason, so no answer stops a credential for years.
const MaxKeyHold = 24 * time.Hour

// KeyNote learns from one answer of the provider to op what holds for
// its whole key, and returns the row to write (nil when nothing changed)
// and what changed: a rate limit (429, or rate_limit.when) holds every
// operation under the key until its reset (Retry-After or rate_limit.reset,
// else the contract's base delay), not only op; a remaining count read
// from remaining_header, with the reset, spreads what remains until then
// (see KeyGrant), and a count of 0 holds the key until the reset. The
// provider's values are bounded or ignored when out of range, each with
// its reason in KeyEffects.Ignored (see KeyFacts). now is the store's
// clock; the answer's times are read relative to its arrival, so they
// move onto that clock.
func KeyNote(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.ContractSpec, obs pollwarden.Observation, now time.Time) (*pollwarden.KeyState, pollwarden.KeyEffects) {
	next := cloneKey(ks)
	facts := KeyFacts(c, obs)
	eff := pollwarden.KeyEffects{Ignored: facts.Ignored}
	changed := false
	if facts.HasRemaining {
		next.Remaining, next.RemainingAt, next.ResetAt = facts.Remaining, now, time.Time{}
		if facts.HasReset {
			next.ResetAt = now.Add(facts.ResetIn)
		}
		changed = true
		if facts.Remaining == 0 && facts.HasReset {
			changed = hold(next, &eff, next.ResetAt,
				fmt.Sprintf("%s said no request remains", c.Quota.RemainingHeader)) || changed
		}
	}
	if facts.RateLimited {
		changed = hold(next, &eff, now.Add(facts.HoldFor), facts.HoldWhy) || changed
	}
	changed = noteKeyIncident(next, &eff, op, c, &obs, now) || changed
	if !changed {
		return nil, eff
	}
	next.UpdatedAt = now
	return next, eff
}

// KeyTaught reports whether obs can teach its key anything (a rate
// limit, or a remaining count the contract reads): only then does the
// save that records it read the key's row (KeyNote would write nothing).
// A rule that makes KeyNote learn from other answers must widen it too.
func KeyTaught(c *pollwarden.ContractSpec, obs pollwarden.Observation) bool {
	return obs.Status == statusTooManyRequests || obs.RateLimitSignal != "" ||
		c.Quota != nil && c.Quota.RemainingHeader != "" && obs.Quota.HasRemaining ||
		IncidentTaught(&obs)
}

// hold holds the key until until, unless it is already held longer.
func hold(ks *pollwarden.KeyState, eff *pollwarden.KeyEffects, until time.Time, why string) bool {
	if !until.After(ks.HoldUntil) {
		return false
	}
	ks.HoldUntil, ks.HoldWhy = until, why
	eff.Held = until
	return true
}

// KeyLesson is what one answer says about its key once checked: what
// KeyNote applies, and the values it refused, each with its reason. It
// depends on the answer and the contract alone, so a caller can record
// the refusals with the answer's events before the key's row is read.
type KeyLesson struct {
	// Remaining is the provider's count, bounded to the quota; only with
	// HasRemaining.
	Remaining    int
	HasRemaining bool
	// ResetIn is how long after the answer the provider's window resets
	// (at most MaxKeyHold); only with HasReset.
	ResetIn  time.Duration
	HasReset bool
	// RateLimited: the answer was a rate limit; the key holds HoldFor,
	// for HoldWhy.
	RateLimited bool
	HoldFor     time.Duration
	HoldWhy     string
	// Ignored lists the values bounded or ignored, with why.
	Ignored []string
}

// KeyFacts checks what obs says about its key under contract c (see
// KeyLesson).
func KeyFacts(c *pollwarden.ContractSpec, obs pollwarden.Observation) KeyLesson {
	var l KeyLesson
	q := obs.Quota
	if c.Quota != nil && c.Quota.RemainingHeader != "" && q.HasRemaining {
		l.Remaining, l.HasRemaining = remainingCount(c.Quota, q.Remaining, &l.Ignored)
	}
	if l.HasRemaining {
		switch {
		case q.HasReset && q.ResetIn > MaxKeyHold:
			l.ResetIn, l.HasReset = MaxKeyHold, true
			l.Ignored = append(l.Ignored, fmt.Sprintf("the quota's reset is %s ahead, more than %s: bounded to %s",
				q.ResetIn.Round(time.Second), MaxKeyHold, MaxKeyHold))
		case q.HasReset:
			l.ResetIn, l.HasReset = q.ResetIn, true
		case q.ResetProblem != "":
			l.Ignored = append(l.Ignored, q.ResetProblem+": the remaining count is not spread")
		}
	}
	if obs.Status == statusTooManyRequests || obs.RateLimitSignal != "" {
		l.RateLimited = true
		l.HoldFor, l.HoldWhy = rateLimitHold(c, obs, &l.Ignored)
	}
	return l
}

// maxRemaining bounds a remaining count where no quota is declared.
const maxRemaining = 1_000_000_000

// remainingCount reads the provider's remaining count: a negative or
// non-numeric value is ignored, one above the declared quota is bounded
// to it (the quota caps the requests anyway), each with a reason.
func remainingCount(q *pollwarden.QuotaSpec, raw string, ignored *[]string) (int, bool) {
	s := strings.TrimSpace(raw)
	n, err := strconv.ParseInt(s, 10, 64)
	var ne *strconv.NumError
	switch {
	case err != nil && errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && !strings.HasPrefix(s, "-"):
		n = max(int64(q.Requests), maxRemaining) + 1 // huge: bounded below
	case err != nil:
		*ignored = append(*ignored, fmt.Sprintf("%s %q is not a whole number: ignored", q.RemainingHeader, clipText(s)))
		return 0, false
	case n < 0:
		*ignored = append(*ignored, fmt.Sprintf("%s %d is negative: ignored", q.RemainingHeader, n))
		return 0, false
	}
	if q.Requests == 0 && n > maxRemaining {
		*ignored = append(*ignored, fmt.Sprintf("%s %s is more than %d: bounded to %d",
			q.RemainingHeader, clipText(s), maxRemaining, maxRemaining))
		return maxRemaining, true
	}
	if q.Requests > 0 && n > int64(q.Requests) {
		*ignored = append(*ignored, fmt.Sprintf("%s %s is more than the quota's %d requests: bounded to %d",
			q.RemainingHeader, clipText(s), q.Requests, q.Requests))
		n = int64(q.Requests)
	}
	return int(n), true
}

// rateLimitHold is how long a rate-limit answer holds its key: its
// Retry-After (or the contract's reset, which the observation carries
// the same way) when valid, at least the contract's base delay, at most
// MaxKeyHold.
func rateLimitHold(c *pollwarden.ContractSpec, obs pollwarden.Observation, ignored *[]string) (time.Duration, string) {
	why := fmt.Sprintf("%d", obs.Status)
	if obs.RateLimitSignal != "" {
		why = obs.RateLimitSignal
	}
	d := Floor(c)
	if obs.RetryAfter != "" {
		at := obs.ReceivedAt
		if w, err := pollwarden.ParseRetryAfter(obs.RetryAfter, at); err == nil {
			d = max(d, w)
			why += ", Retry-After " + clipText(obs.RetryAfter)
		}
		// A bad value is already refused with the answer (Decide).
	}
	if d > MaxKeyHold {
		*ignored = append(*ignored, fmt.Sprintf("the rate limit's reset is %s ahead, more than %s: the key is held %s",
			d.Round(time.Second), MaxKeyHold, MaxKeyHold))
		d = MaxKeyHold
	}
	return d, "rate limited: " + why
}

// statusTooManyRequests is HTTP 429 (policy links no net/http).
const statusTooManyRequests = 429

// clipText cuts a provider's value for a reason, between characters.
func clipText(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}
