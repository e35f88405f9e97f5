package policy

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// BudgetSpan is how long max requests last under the contract's backoff
// alone (no hints, no Retry-After), from the first request to the last:
// shortest with the lowest jitter factor, longest with the highest. It
// uses Delay, the decision core's own schedule.
func BudgetSpan(b pollwarden.Backoff, requests int) (shortest, longest time.Duration) {
	for k := 1; k < requests; k++ {
		shortest += Delay(b, k, FactorMin)
		longest += Delay(b, k, FactorMax)
		if longest > pollwarden.MaxSpan {
			break
		}
	}
	return shortest, longest
}

// requestsWithin counts the requests sent before span has passed at the
// pace of factor f, stopping at most.
func requestsWithin(b pollwarden.Backoff, f float64, span time.Duration, most int) int {
	n, at := 1, time.Duration(0)
	for n < most {
		at += Delay(b, n, f)
		if at >= span {
			break
		}
		n++
	}
	return n
}

// LimitWarnings says when a contract's limits contradict each other: the
// request budget is spent well before the deadline (so the deadline never
// stops an operation), or the deadline comes long before the budget could
// be spent. "Well" and "long" mean by a factor of two, at the pace most
// favourable to the other limit, so a warning is never a close call. The
// escalation's extension is checked the same way (extensionWarnings).
func LimitWarnings(c *pollwarden.ContractSpec) []string {
	lim, b := c.Limits, c.Backoff
	if b.Base <= 0 || b.Max < b.Base {
		return nil
	}
	out := extensionWarnings(c)
	if lim.MaxStatusRequests < 2 || lim.Deadline <= 0 {
		return out
	}
	shortest, longest := BudgetSpan(b, lim.MaxStatusRequests)
	backoff := fmt.Sprintf("a %s–%s backoff", pollwarden.ShortDuration(b.Base), pollwarden.ShortDuration(b.Max))
	if 2*longest < lim.Deadline {
		out = append(out, fmt.Sprintf("%d status requests under %s last about %s; the %s deadline will never be what stops this operation (raise max_status_requests or backoff.max, or lower the deadline)",
			lim.MaxStatusRequests, backoff, spanText(shortest, longest), pollwarden.ShortDuration(lim.Deadline)))
	}
	if most := requestsWithin(b, FactorMin, lim.Deadline, lim.MaxStatusRequests); 2*most < lim.MaxStatusRequests {
		least := requestsWithin(b, FactorMax, lim.Deadline, lim.MaxStatusRequests)
		out = append(out, fmt.Sprintf("the %s deadline comes after about %s of the %d status requests under %s; the request budget will never be what stops this operation (lower max_status_requests or backoff.max, or raise the deadline)",
			pollwarden.ShortDuration(lim.Deadline), countText(least, most), lim.MaxStatusRequests, backoff))
	}
	return out
}

func countText(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// spanText writes a range of durations in one readable unit.
func spanText(lo, hi time.Duration) string {
	unit, name := time.Second, "seconds"
	switch {
	case hi >= 3*time.Hour:
		unit, name = time.Hour, "hours"
	case hi >= 3*time.Minute:
		unit, name = time.Minute, "minutes"
	}
	l := int(math.Round(float64(lo) / float64(unit)))
	h := int(math.Round(float64(hi) / float64(unit)))
	if l == h {
		if l == 1 {
			name = strings.TrimSuffix(name, "s") // "about 1 second"
		}
		return fmt.Sprintf("%d %s", l, name)
	}
	return fmt.Sprintf("%d to %d %s", l, h, name)
}
