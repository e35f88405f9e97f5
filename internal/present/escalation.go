package present

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// The words of an escalation's facts and options, the same in the stored
// decision request, the console, webhooks (JSON, Slack, e-mail), MCP and
// the CLI: each medium lays them out its own way, never words them again.

// LastState is the last state observed for op, escaped, with the
// provider's own word when it differs.
func LastState(op *pollwarden.Operation) string {
	last := display.Value(op.LastState)
	if op.LastState == "" {
		last = "(none observed)"
	}
	if op.LastProviderState != "" {
		last += " (provider said " + display.Text(op.LastProviderState) + ")"
	}
	return last
}

// LastHTTP is op's last HTTP result: its status and time, "no answer" at
// a time, or "none yet".
func LastHTTP(op *pollwarden.Operation) string {
	switch {
	case op.LastHTTPAt == nil:
		return "none yet"
	case op.LastHTTP == 0:
		return "no answer at " + op.LastHTTPAt.UTC().Format("15:04:05 UTC")
	}
	return fmt.Sprintf("%d at %s", op.LastHTTP, op.LastHTTPAt.UTC().Format("15:04:05 UTC"))
}

// ExtendLabel is the extend option's label: the time and requests it
// adds, the new deadline and budget, effect (how long the requests last,
// from policy) and what else an extension lifts for reason r.
func ExtendLabel(d time.Duration, more int, deadline time.Time, newMax int, effect string, r pollwarden.Reason) string {
	return fmt.Sprintf("Extend waiting once by %s with %d more status requests (new deadline %s, budget %d%s)%s",
		humanDuration(d), more, deadline.UTC().Format("15:04:05 UTC"), newMax, effect, extendNote(r))
}

// extendNote is what an extension also lifts for reason r.
func extendNote(r pollwarden.Reason) string {
	switch r {
	case pollwarden.ReasonRateLimited:
		return ", and 1 more rate-limited answer"
	case pollwarden.ReasonProviderFailure:
		return ", and 1 more transport failure"
	case pollwarden.ReasonUnknownState:
		return "; an unlisted state stops again"
	}
	return ""
}

// humanDuration says "15 minutes" where it reads better than "15m0s".
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d >= time.Hour:
		return plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0 && d >= time.Minute:
		return plural(int(d/time.Minute), "minute")
	case d%time.Second == 0:
		return plural(int(d/time.Second), "second")
	}
	return d.String()
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// InspectLabel is the inspect option's label for the expanded console
// link (ConsoleLink).
func InspectLabel(link string) string { return "Inspect the provider console: " + link }

// CancelLabel is the cancel option's label for the contract's cancel
// method and its expanded URL.
func CancelLabel(method, url string) string {
	return fmt.Sprintf("Cancel at provider (%s %s); costs one call", method, url)
}

// AbandonLabel is the abandon option's label: of a waiting that stopped,
// of an observed cancel (the operation then stays escalated), or of a
// submission.
func AbandonLabel(cancelInForce, submission bool) string {
	switch {
	case submission:
		return "Stop and close the operation as failed; nothing more is sent"
	case cancelInForce:
		return "Stop observing the cancel; nothing more is sent, and the operation stays escalated since the job's end is not known"
	}
	return "Stop waiting and close the operation as failed; nothing more is sent"
}

// ResubmitLabel is the resubmit option's label, with or without a stored
// idempotency key.
func ResubmitLabel(withKey bool) string {
	if withKey {
		return "Resubmit the job with the stored idempotency key"
	}
	return "Resubmit the job without an idempotency key: if the provider has it, it will have two"
}

// OptionCost says what choosing o spends: more time and requests, one
// call to the provider, or nothing.
func OptionCost(o pollwarden.Option) string {
	var parts []string
	if o.ExtraTime != "" {
		parts = append(parts, o.ExtraTime+" more")
	}
	if o.ExtraStatusRequests > 0 {
		parts = append(parts, fmt.Sprintf("%d more status requests", o.ExtraStatusRequests))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, ", ")
	case o.ID == pollwarden.OptionCancel || o.ID == pollwarden.OptionApproveCall:
		return "one call to the provider"
	}
	return "nothing more is sent"
}

// OptionNewLimit says the limits choosing o sets, or "unchanged".
func OptionNewLimit(o pollwarden.Option) string {
	var parts []string
	if o.NewDeadline != nil {
		parts = append(parts, "deadline "+o.NewDeadline.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if o.NewMaxStatusRequests > 0 {
		parts = append(parts, fmt.Sprintf("budget %d status requests", o.NewMaxStatusRequests))
	}
	if len(parts) == 0 {
		return "unchanged"
	}
	return strings.Join(parts, ", ")
}
