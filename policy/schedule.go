package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// schedule sets the next poll time after an answer that permits waiting.
// Retry-After is a minimum (R7); a valid provider hint replaces the local
// backoff (R6), raised to at least backoff.base so a hint of zero cannot
// turn into a tight loop; otherwise the backoff with the operation's own jitter factor applies (R5), or
// the sharp rate-limit delay after a bare 429 (R8). If the earliest allowed
// time is at or past the deadline the operation stops now rather than
// sleeping into it: no further request could be sent.
func (d *decider) schedule(rateLimited bool) {
	op, c := d.op, d.c
	// The budget is checked just before scheduling (R11): with none left
	// there is nothing to schedule, so stop now rather than sleep first.
	if op.StatusRequestsUsed >= op.MaxStatusRequests {
		d.escalate(pollwarden.ReasonRequestBudgetExhausted, fmt.Sprintf("every allowed status request was used: %d of %d",
			op.StatusRequestsUsed, op.MaxStatusRequests))
		return
	}
	var (
		minWait time.Duration
		hasMin  bool
	)
	if ra := d.obs.RetryAfter; ra != "" {
		w, err := pollwarden.ParseRetryAfter(ra, d.now)
		if err != nil {
			d.reject(err.Error())
		} else {
			minWait, hasMin = w, true
		}
	}
	wait, src := time.Duration(0), pollwarden.DelayLocalBackoff
	usedHint := false
	if d.obs.Status >= 200 && d.obs.Status < 300 {
		hw, ok, rejected := hintWait(d.obs.Body.PollAfter, d.obs.Body.NextCheckAt, d.now, op.DeadlineAt)
		for _, why := range rejected {
			d.reject(why)
		}
		if ok {
			wait, src, usedHint = max(hw, Floor(c)), pollwarden.DelayPollHint, true
		}
	}
	if !usedHint {
		if rateLimited && !hasMin {
			wait = RateLimitedDelay(c.Backoff, op.CompletedPolls, d.r)
		} else {
			wait = Delay(c.Backoff, op.CompletedPolls, op.JitterFactor)
		}
	}
	if hasMin && minWait >= wait {
		wait, src = minWait, pollwarden.DelayRetryAfter
	}
	next := d.now.Add(wait)
	if !next.Before(op.DeadlineAt) {
		why := fmt.Sprintf("the next allowed request (%s, from %s) is at or past the deadline %s",
			next.UTC().Format(time.RFC3339), src, op.DeadlineAt.UTC().Format(time.RFC3339))
		d.resp.NextPollAt, d.resp.DelaySource = &next, src
		d.escalate(pollwarden.ReasonDeadlineExceeded, why)
		return
	}
	op.NextPollAt, op.NextPollSource = next, src
	d.resp.NextPollAt, d.resp.DelaySource = &next, src
	if d.resp.Decision == "" {
		d.resp.Decision = "wait"
	}
	d.flush()
}
