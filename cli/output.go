package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/internal/present"
	"github.com/pollwarden/pollwarden/policy"
)

// printOutcome writes the final record: one JSON object with --json, one
// line with --quiet, else a short human summary (with the escalation's
// decision request when there is one, and the whole decide command:
// storeFlag is the --store the command was given, if any).
func (env Env) printOutcome(op *pollwarden.Operation, asJSON, quiet bool, storeFlag string) error {
	if asJSON {
		return writeJSON(env.Stdout, pollwarden.OutcomeOf(op))
	}
	fmt.Fprintln(env.Stdout, summaryLine(op))
	if quiet {
		return nil
	}
	if op.Priority != 0 {
		// Only a priority someone gave: the default says nothing.
		fmt.Fprintf(env.Stdout, "priority: %d (1 most urgent, 9 least)\n", op.Priority)
	}
	// The JSON is printed as text: JSON escapes line breaks but not every
	// control or bidi character a provider may send.
	if len(op.Result) > 0 {
		fmt.Fprintf(env.Stdout, "result: %s\n", display.Text(string(op.Result)))
	}
	if len(op.ProviderError) > 0 {
		fmt.Fprintf(env.Stdout, "provider error: %s\n", display.Text(string(op.ProviderError)))
	}
	if op.Escalation != nil {
		// The message's own lines are kept; each is escaped in case a
		// record written before the message escaped its values.
		for line := range strings.SplitSeq(op.Escalation.Message, "\n") {
			fmt.Fprintln(env.Stdout, display.Text(line))
		}
		// A question still open is answered by its id; an answered one
		// (the message says by whom) takes no decision.
		if op.Phase.AwaitsDecision() && op.Escalation.Decided == nil && len(op.Escalation.Options) > 0 {
			fmt.Fprintf(env.Stdout, "decide with: %s\n", env.decideCommand(op, storeFlag))
		}
	}
	if d := op.LastDecision; d != nil && (op.Escalation == nil || op.Escalation.Decided == nil) {
		fmt.Fprintf(env.Stdout, "last decision: %s\n", policy.DecisionText(d))
	}
	return nil
}

// decideCommand is the command that answers op's escalation, whole: --by
// is required where $USER is unset (containers, cron), so it is always
// given, with the user's name when known.
func (env Env) decideCommand(op *pollwarden.Operation, storeFlag string) string {
	by := env.lookup("USER")
	if by == "" {
		by = "NAME"
	}
	esc := ""
	if op.Escalation != nil && op.Escalation.ID != "" {
		esc = " --escalation " + shellWord(op.Escalation.ID)
	}
	return fmt.Sprintf("pollwarden decide %s OPTION%s --by %s%s", shellWord(op.ID), esc, shellWord(by), storeWords(storeFlag))
}

// summaryLine is the one-line outcome of an operation.
func summaryLine(op *pollwarden.Operation) string {
	s := string(op.Phase)
	if op.Reason != "" {
		s += " " + string(op.Reason)
	}
	state := display.Value(op.LastState)
	if op.LastState == "" {
		state = "-"
	}
	return fmt.Sprintf("%s  operation %s  job %s  state %s  requests %d/%d",
		s, display.Value(op.ID), display.Value(op.ProviderJobID), state, op.StatusRequestsUsed, op.MaxStatusRequests)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// progressText is the live line: the operation, its state and last HTTP
// result, elapsed/deadline, requests used of budget (and transport
// failures once one is spent), and when the next
// check is due and who set that time (the provider's Retry-After or hint,
// or the local backoff), so a person can tell waiting on the provider's
// word from waiting on pollwarden's own schedule.
func progressText(op *pollwarden.Operation, next, now time.Time) string {
	state := display.Value(op.LastState)
	if op.LastState == "" {
		state = "not yet observed"
	}
	total := op.DeadlineAt.Sub(op.StartedAt)
	in := max(next.Sub(now), 0).Round(time.Second)
	s := fmt.Sprintf("%s · %s · %s · %s / %s · %s · next check in %s",
		display.Value(op.ID), state, lastHTTPText(op), clockDur(now.Sub(op.StartedAt)), clockDur(total),
		strings.ReplaceAll(budgetText(op), ", ", " · "), in)
	if by := nextSetBy(op.NextPollSource); by != "" {
		s += " (" + by + ")"
	}
	return s
}

// lastHTTPText is the last status answer's HTTP code, in words when
// there was none.
func lastHTTPText(op *pollwarden.Operation) string {
	switch {
	case op.StatusRequestsUsed == 0:
		return "no request yet"
	case op.LastHTTP == 0:
		return "no HTTP answer"
	}
	return fmt.Sprintf("HTTP %d", op.LastHTTP)
}

// nextSetBy names who chose the next check's time, in the words every
// medium uses (present.DelaySource).
func nextSetBy(s pollwarden.DelaySource) string { return present.DelaySource(s) }

// clockDur prints 1:05:09 or 5:09.
func clockDur(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// pad keeps a rewritten terminal line from leaving old characters behind.
func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
