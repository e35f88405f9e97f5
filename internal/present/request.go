package present

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// Question is an escalation as data, as policy decides it: the reason,
// its detail and the options offered, and where a cancel at the provider
// stands ("" when none was asked). DecisionRequest words it.
type Question struct {
	Reason  pollwarden.Reason
	Detail  string
	Options []pollwarden.Option
	Cancel  string
}

// DecisionRequest is the decision request of R19 for op stopped with q
// at now: enough to decide, nothing secret, never a bare "continue?". It
// is stored as the escalation's message, which the console, webhooks, MCP
// guidance and the CLI show as written.
func DecisionRequest(op *pollwarden.Operation, q Question, now time.Time) string {
	var b strings.Builder
	b.WriteString("External job needs a decision\n")
	// Ids, the state and the detail come from an agent or a provider:
	// escaped, they cannot add a line to the message.
	fmt.Fprintf(&b, "Operation: %s\nProvider job: %s\n", display.Value(op.ID), Job(op))
	if len(op.Vars) > 0 {
		fmt.Fprintf(&b, "Variables: %s\n", display.Text(Vars(op.Vars)))
	}
	fmt.Fprintf(&b, "Last state: %s\nElapsed time: %s\n", LastState(op), Elapsed(op, now))
	fmt.Fprintf(&b, "Status requests: %d of %d\n", op.StatusRequestsUsed, op.MaxStatusRequests)
	fmt.Fprintf(&b, "Last HTTP result: %s\n", LastHTTP(op))
	if q.Cancel != "" {
		fmt.Fprintf(&b, "Cancel at provider: %s\n", display.Text(q.Cancel))
	}
	fmt.Fprintf(&b, "Stopped because: %s (%s)\n", q.Reason, display.Text(q.Detail))
	b.WriteString("Options:")
	for _, o := range q.Options {
		fmt.Fprintf(&b, "\n  [%s] %s", o.ID, display.Text(o.Label))
	}
	if q.Reason == pollwarden.ReasonAuthorizationDenied && op.RefusedCredential != nil {
		fmt.Fprintf(&b, "\nOnce credential %s differs from the refused one, %s is offered: one status request with it",
			display.Value(op.RefusedCredential.Ref), pollwarden.OptionRetryCredential)
	}
	return b.String()
}

// Job names the provider job for a person, escaped (the id comes from an
// agent or a provider), or its status URL, shown without its secrets,
// when the job has no id.
func Job(op *pollwarden.Operation) string {
	if op.ProviderJobID == "" {
		return "(status URL " + display.Text(pollwarden.ShownURL(op.StatusURL)) + ")"
	}
	return display.Value(op.ProviderJobID)
}

// Vars writes an operation's variables as "owner=acme, repo=web", sorted
// by name, unescaped: the caller escapes for its medium.
func Vars(vars map[string]string) string {
	parts := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		parts = append(parts, k+"="+vars[k])
	}
	return strings.Join(parts, ", ")
}

// Elapsed is the time since op started, to the second.
func Elapsed(op *pollwarden.Operation, now time.Time) string {
	return now.Sub(op.StartedAt).Round(time.Second).String()
}
