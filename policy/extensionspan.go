package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// RequestsSpan is how long n status requests last under backoff b alone
// (no hints, no Retry-After) when the first is sent at once and the
// operation has already completed from polls: the sum of the n−1 delays
// that follow, at jitter factor f. An extension's requests start this way
// (the first check after an approval is immediate), so this is how much
// of the extension's time they can really watch.
func RequestsSpan(b pollwarden.Backoff, from, n int, f float64) time.Duration {
	var span time.Duration
	for k := from; k < from+n-1; k++ {
		span += Delay(b, k, f)
		if span > pollwarden.MaxSpan {
			break
		}
	}
	return span
}

// extensionEffect says, for an option's label, how long the extension's
// requests last for this operation at its own jitter factor, so an
// approver sees the effect and not only the cost (4 requests at a 1s–5s
// backoff watch 10 seconds, whatever the extra time says).
func extensionEffect(op *pollwarden.Operation, c *pollwarden.ContractSpec, more int) string {
	b := c.Backoff
	if more <= 0 || b.Base <= 0 || b.Max < b.Base {
		return ""
	}
	if more == 1 {
		return "; the 1 request is sent at once"
	}
	span := RequestsSpan(b, op.CompletedPolls, more, op.JitterFactor)
	return fmt.Sprintf("; the %d requests last about %s under the %s–%s backoff", more,
		spanText(span, span), pollwarden.ShortDuration(b.Base), pollwarden.ShortDuration(b.Max))
}

// extensionWarnings is LimitWarnings for the escalation's extension: its
// requests, granted after the base budget, are spent long before its time
// (most of the time is unusable), or its time passes long before half its
// requests could be sent. Same factor-of-two margin as the base limits.
func extensionWarnings(c *pollwarden.ContractSpec) []string {
	e, b := c.Escalation, c.Backoff
	if e.ExtensionRequests < 2 || e.ExtensionTime <= 0 {
		return nil
	}
	from := max(c.Limits.MaxStatusRequests, 1)
	shortest := RequestsSpan(b, from, e.ExtensionRequests, FactorMin)
	longest := RequestsSpan(b, from, e.ExtensionRequests, FactorMax)
	backoff := fmt.Sprintf("a %s–%s backoff", pollwarden.ShortDuration(b.Base), pollwarden.ShortDuration(b.Max))
	var out []string
	if 2*longest < e.ExtensionTime {
		out = append(out, fmt.Sprintf("an extension's %d status requests under %s last about %s; most of its %s will go unwatched (raise escalation.extension.status_requests or lower escalation.extension.time)",
			e.ExtensionRequests, backoff, spanText(shortest, longest), pollwarden.ShortDuration(e.ExtensionTime)))
	}
	if 2*RequestsSpan(b, from, (e.ExtensionRequests+1)/2, FactorMin) > e.ExtensionTime {
		out = append(out, fmt.Sprintf("an extension's %s passes before half of its %d status requests under %s are sent; most of them cannot be used (lower escalation.extension.status_requests or raise escalation.extension.time)",
			pollwarden.ShortDuration(e.ExtensionTime), e.ExtensionRequests, backoff))
	}
	return out
}
