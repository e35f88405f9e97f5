package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/internal/present"
)

// Escalate stops op with reason r and attaches the bounded decision a
// person is asked for (R19). It mutates op and returns the event to record.
func Escalate(op *pollwarden.Operation, c *pollwarden.Contract, r pollwarden.Reason, detail string, now time.Time) []pollwarden.Event {
	op.Phase = pollwarden.PhaseEscalated
	op.Reason = r
	t := now
	op.FinishedAt = &t
	opts := Options(op, c, r, now)
	op.Escalation = &pollwarden.Escalation{
		ID:      nextEscalationID(op),
		Reason:  r,
		Message: message(op, r, detail, opts, now),
		Options: opts,
		At:      now,
	}
	return []pollwarden.Event{newEvent(op, now, pollwarden.EventEscalated, pollwarden.EventData{
		State:        op.LastState,
		Reason:       r,
		Detail:       detail,
		RequestsUsed: op.StatusRequestsUsed,
		MaxRequests:  op.MaxStatusRequests,
		Elapsed:      elapsed(op, now),
		Options:      opts,
	})}
}

// Options lists the bounded choices for reason r (R19, R21). Each states
// its cost and the limit it would set. An authorization failure is never
// offered a retry with the same credential; cancel appears only when the
// contract documents a cancel action. Options itself never offers a
// resubmission: a failed submission's escalation adds it (submitEscalate).
func Options(op *pollwarden.Operation, c *pollwarden.Contract, r pollwarden.Reason, now time.Time) []pollwarden.Option {
	var opts []pollwarden.Option
	switch {
	case c.Status.EachCallNeedsApproval() && op.ApprovedCalls <= 0 && r == pollwarden.ReasonIntegrationFailure:
		opts = append(opts, pollwarden.Option{
			ID:              pollwarden.OptionApproveCall,
			Label:           approveCallLabel(op, c),
			GrantsAuthority: true,
		})
	case r != pollwarden.ReasonAuthorizationDenied:
		opts = append(opts, extendOption(op, c, r, now))
	}
	if c.Cancel != nil && r != pollwarden.ReasonAuthorizationDenied && (!op.Cancel.InForce() || c.Cancel.Idempotent) {
		opts = append(opts, pollwarden.Option{
			ID:              pollwarden.OptionCancel,
			Label:           fmt.Sprintf("Cancel at provider (%s %s); costs one call", c.Cancel.Method, substituteJob(c.Cancel.URL, op)),
			GrantsAuthority: true,
		})
	}
	if c.Escalation.ConsoleURL != "" {
		opts = append(opts, pollwarden.Option{
			ID:    pollwarden.OptionInspect,
			Label: "Inspect the provider console: " + substituteJob(c.Escalation.ConsoleURL, op),
		})
	}
	abandon := "Stop waiting and close the operation as failed; nothing more is sent"
	if op.Cancel.InForce() {
		abandon = "Stop observing the cancel; nothing more is sent, and the operation stays escalated since the job's end is not known"
	}
	opts = append(opts, pollwarden.Option{ID: pollwarden.OptionAbandon, Label: abandon})
	return opts
}

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

// extendedDeadline grants time from the later of the old deadline and now,
// so an extension is never eaten by time already past.
func extendedDeadline(op *pollwarden.Operation, d time.Duration, now time.Time) time.Time {
	base := op.DeadlineAt
	if now.After(base) {
		base = now
	}
	return base.Add(d)
}

// message is the decision request of R19: enough to decide, nothing secret,
// never a bare "continue?".
func message(op *pollwarden.Operation, r pollwarden.Reason, detail string, opts []pollwarden.Option, now time.Time) string {
	var b strings.Builder
	b.WriteString("External job needs a decision\n")
	// Ids, the state and the detail come from an agent or a provider:
	// escaped, they cannot add a line to the message.
	fmt.Fprintf(&b, "Operation: %s\nProvider job: %s\n", display.Value(op.ID), jobText(op))
	if len(op.Vars) > 0 {
		fmt.Fprintf(&b, "Variables: %s\n", display.Text(VarsText(op.Vars)))
	}
	last := display.Value(op.LastState)
	if op.LastState == "" {
		last = "(none observed)"
	}
	if op.LastProviderState != "" {
		last += " (provider said " + op.LastProviderState + ")"
	}
	fmt.Fprintf(&b, "Last state: %s\nElapsed time: %s\n", last, elapsed(op, now))
	fmt.Fprintf(&b, "Status requests: %d of %d\n", op.StatusRequestsUsed, op.MaxStatusRequests)
	if op.LastHTTPAt != nil {
		if op.LastHTTP != 0 {
			fmt.Fprintf(&b, "Last HTTP result: %d at %s\n", op.LastHTTP, op.LastHTTPAt.UTC().Format("15:04:05 UTC"))
		} else {
			fmt.Fprintf(&b, "Last HTTP result: no answer at %s\n", op.LastHTTPAt.UTC().Format("15:04:05 UTC"))
		}
	} else {
		b.WriteString("Last HTTP result: none\n")
	}
	if op.Cancel != nil {
		fmt.Fprintf(&b, "Cancel at provider: %s\n", display.Text(CancelSummary(op.Cancel)))
	}
	fmt.Fprintf(&b, "Stopped because: %s (%s)\n", r, display.Text(detail))
	b.WriteString("Options:")
	for _, o := range opts {
		fmt.Fprintf(&b, "\n  [%s] %s", o.ID, display.Text(o.Label))
	}
	if r == pollwarden.ReasonAuthorizationDenied && op.RefusedCredential != nil {
		fmt.Fprintf(&b, "\nOnce credential %s differs from the refused one, %s is offered: one status request with it",
			display.Value(op.RefusedCredential.Ref), pollwarden.OptionRetryCredential)
	}
	return b.String()
}

func elapsed(op *pollwarden.Operation, now time.Time) string {
	return now.Sub(op.StartedAt).Round(time.Second).String()
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

// substituteJob fills a contract URL for a person to read
// (present.ConsoleLink), or leaves the template as written when it does
// not expand.
func substituteJob(tmpl string, op *pollwarden.Operation) string {
	if out, ok := present.ConsoleLink(tmpl, op); ok {
		return out
	}
	return tmpl
}
