package present_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/internal/present"
	"github.com/pollwarden/pollwarden/policy"
)

// escalatedRun is a github-actions-run operation stopped at its deadline
// after a transport failure: its stored decision request and options are
// what every medium shows.
func escalatedRun(t *testing.T) (*pollwarden.Operation, *pollwarden.ContractSpec) {
	t.Helper()
	ex, err := contract.Builtin("github-actions-run")
	if err != nil {
		t.Fatal(err)
	}
	c := ex.Spec()
	now := time.Date(2026, 4, 18, 11, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute)
	op := &pollwarden.Operation{ID: "op-1", Contract: c.Name, Vars: map[string]string{"owner": "acme", "repo": "api"},
		ProviderJobID: "123", StartedAt: now.Add(-time.Hour), DeadlineAt: now, LastState: "queued",
		LastProviderState: "queued", LastHTTPAt: &at, MaxStatusRequests: 10, StatusRequestsUsed: 10}
	policy.Escalate(op, c, pollwarden.ReasonDeadlineExceeded, "deadline passed", now)
	return op, c
}

// TestDecisionRequestUsesTheSharedWords: the stored decision request says
// the last state, the last HTTP result and every option's label in the
// words of this package, so a medium that shows the message and one that
// lays out the facts itself (webhooks, console) read the same.
func TestDecisionRequestUsesTheSharedWords(t *testing.T) {
	op, c := escalatedRun(t)
	msg := op.Escalation.Message
	link, _ := present.ConsoleLink(c.Escalation.ConsoleURL, op)
	for _, want := range []string{"Last state: " + present.LastState(op), "Last HTTP result: " + present.LastHTTP(op),
		"no answer at 10:59:00 UTC", "[inspect_console] " + present.InspectLabel(link), "[abandon] " + present.AbandonLabel(false, false)} {
		if !strings.Contains(msg, want) {
			t.Errorf("decision request lacks %q:\n%s", want, msg)
		}
	}
}

// TestOneOptionBuilder: a submission's escalation and an abandon after a
// cancel offer their choices from the same builder as any escalation:
// the inspect option reads the same in all three.
func TestOneOptionBuilder(t *testing.T) {
	op, c := escalatedRun(t)
	link, _ := present.ConsoleLink(c.Escalation.ConsoleURL, op)
	sub := op.Clone()
	sub.Phase = pollwarden.PhaseSubmitting
	sub.Escalation = nil
	sub.Submission = &pollwarden.Submission{State: pollwarden.SubmissionSent, Attempts: 1, MaxAttempts: 1}
	// The provider answered with a job but no status location.
	next, _, _ := policy.SubmitAnswered(sub, c, 1, policy.SubmitResult{Sent: true, Status: 201, JobID: "123", Problem: "no status location"}, time.Now())
	if next == nil || next.Escalation == nil {
		t.Fatalf("no submission escalation: %+v", next)
	}
	labels := map[string]string{}
	for _, o := range next.Escalation.Options {
		labels[o.ID] = o.Label
	}
	if labels[pollwarden.OptionInspect] != present.InspectLabel(link) || labels[pollwarden.OptionAbandon] != present.AbandonLabel(false, true) {
		t.Fatalf("submission options %v: want the shared inspect and abandon labels", labels)
	}
}
