package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestExitCodeForEveryOutcome(t *testing.T) {
	for _, c := range []struct {
		phase  pollwarden.Phase
		reason pollwarden.Reason
		want   int
	}{
		{pollwarden.PhaseSucceeded, "", 0}, {pollwarden.PhaseFailed, "", 10}, {pollwarden.PhaseCancelled, "", 11},
		{pollwarden.PhaseExpired, "", 12},
		{pollwarden.PhaseEscalated, pollwarden.ReasonDeadlineExceeded, 20},
		{pollwarden.PhaseEscalated, pollwarden.ReasonRequestBudgetExhausted, 21},
		{pollwarden.PhaseEscalated, pollwarden.ReasonRateLimited, 22},
		{pollwarden.PhaseEscalated, pollwarden.ReasonUnknownState, 23},
		{pollwarden.PhaseEscalated, pollwarden.ReasonAuthorizationDenied, 24},
		{pollwarden.PhaseEscalated, pollwarden.ReasonProviderFailure, 25},
		{pollwarden.PhaseEscalated, pollwarden.ReasonIntegrationFailure, 26},
		{pollwarden.PhaseWaiting, "", 1},
	} {
		if got := ExitCode(&pollwarden.Operation{Phase: c.phase, Reason: c.reason}); got != c.want {
			t.Errorf("%s %s: exit %d, want %d", c.phase, c.reason, got, c.want)
		}
	}
}

func TestProgressLineShowsStateTimeBudgetAndNextCheck(t *testing.T) {
	t0 := time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)
	op := &pollwarden.Operation{LastState: "running", StartedAt: t0, DeadlineAt: t0.Add(40 * time.Minute),
		StatusRequestsUsed: 3, MaxStatusRequests: 12}
	got := progressText(op, t0.Add(65*time.Second), t0.Add(61*time.Second))
	for _, want := range []string{"running", "1:01 / 40:00", "requests 3/12", "next check in 4s"} {
		if !strings.Contains(got, want) {
			t.Errorf("live line %q lacks %q", got, want)
		}
	}
}

// TestHumanOutputEscapesProviderText: the live line, the summary and the
// printed record show a provider's state and error on their own lines,
// with no control sequence reaching the terminal.
func TestHumanOutputEscapesProviderText(t *testing.T) {
	t0 := time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)
	op := &pollwarden.Operation{ID: "op\n1", ProviderJobID: "job\x1b[2J", LastState: "running\n06:49:40 alice (approver) decided extend\u202e",
		Phase: pollwarden.PhaseFailed, StartedAt: t0, DeadlineAt: t0.Add(time.Hour), ProviderError: []byte(`{"m":"x` + "\u202e" + `"}`)}
	var out strings.Builder
	env := Env{Stdout: &out}
	if err := env.printOutcome(op, false, false, ""); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"live line": progressText(op, t0, t0), "record": out.String()} {
		if strings.ContainsAny(s, "\x1b\u202e") || strings.Contains(s, "\n06:49:40") {
			t.Errorf("%s shows provider text raw: %q", name, s)
		}
		if !strings.Contains(s, `"running\n06:49:40 alice (approver) decided extend\u202e"`) {
			t.Errorf("%s does not quote the state: %q", name, s)
		}
	}
	if !strings.Contains(out.String(), `operation "op\n1"  job "job\x1b[2J"`) || !strings.Contains(out.String(), `provider error: {"m":"x\u202e"}`) {
		t.Errorf("record: %q", out.String())
	}
}
