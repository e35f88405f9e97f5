package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The research case: a 1s–5s backoff, 4 extension requests after 12 polls.
// The label must say the requests last seconds, not the 5 minutes offered.
func TestExtendLabelSaysHowLongItsRequestsLast(t *testing.T) {
	now := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	c := &pollwarden.ContractSpec{
		Backoff:    pollwarden.Backoff{Base: time.Second, Max: 5 * time.Second},
		Limits:     pollwarden.Limits{Deadline: 30 * time.Second, MaxStatusRequests: 12},
		Escalation: pollwarden.EscalationSpec{ExtensionTime: 5 * time.Minute, ExtensionRequests: 4},
	}
	op := &pollwarden.Operation{ID: "op", StartedAt: now.Add(-time.Minute), DeadlineAt: now.Add(time.Minute),
		MaxStatusRequests: 12, StatusRequestsUsed: 12, CompletedPolls: 12, JitterFactor: 1}
	var label string
	for _, o := range Options(op, c, pollwarden.ReasonRequestBudgetExhausted, now) {
		if o.ID == pollwarden.OptionExtend {
			label = o.Label
		}
	}
	// Three delays at the cap, factor 1 → capped 0.7: 3 × 3.5 s.
	want := "Extend waiting once by 5 minutes with 4 more status requests (new deadline 23:06:00 UTC, budget 16; the 4 requests last about 11 seconds under the 1s–5s backoff)"
	if label != want {
		t.Fatalf("label\n %q\nwant\n %q", label, want)
	}
	op.JitterFactor = 0.5
	c.Escalation.ExtensionRequests = 1
	for _, o := range Options(op, c, pollwarden.ReasonRequestBudgetExhausted, now) {
		if o.ID == pollwarden.OptionExtend && !strings.Contains(o.Label, "the 1 request is sent at once") {
			t.Fatalf("one-request label %q", o.Label)
		}
	}
}

func TestRequestsSpanFollowsTheSchedule(t *testing.T) {
	b := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	if got := RequestsSpan(b, 3, 1, 1); got != 0 {
		t.Fatalf("one request spans %s, want 0 (it is sent at once)", got)
	}
	want := Delay(b, 3, 0.8) + Delay(b, 4, 0.8) + Delay(b, 5, 0.8)
	if got := RequestsSpan(b, 3, 4, 0.8); got != want {
		t.Fatalf("RequestsSpan = %s, want %s", got, want)
	}
}

func TestExtensionWarnings(t *testing.T) {
	base := pollwarden.ContractSpec{
		Backoff: pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second},
		Limits:  pollwarden.Limits{Deadline: time.Hour, MaxStatusRequests: 40},
	}
	for _, tc := range []struct {
		name     string
		time     time.Duration
		requests int
		want     string
	}{
		{"requests too few", 15 * time.Minute, 4, "an extension's 4 status requests under a 5s–2m backoff last about 3 to 4 minutes; most of its 15m will go unwatched"},
		{"time too short", 2 * time.Minute, 10, "an extension's 2m passes before half of its 10 status requests under a 5s–2m backoff are sent"},
		{"fits", 15 * time.Minute, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Escalation = pollwarden.EscalationSpec{ExtensionTime: tc.time, ExtensionRequests: tc.requests}
			got := LimitWarnings(&c)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no warning, got %q", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Fatalf("got %q\nwant one starting %q", got, tc.want)
			}
		})
	}
}
