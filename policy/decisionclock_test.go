package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func escalatedAt(at time.Time, reminders int, opts ...string) *pollwarden.Operation {
	e := &pollwarden.Escalation{Reason: pollwarden.ReasonRequestBudgetExhausted, At: at, Reminders: reminders}
	for _, id := range opts {
		e.Options = append(e.Options, pollwarden.Option{ID: id})
	}
	return &pollwarden.Operation{ID: "op", Phase: pollwarden.PhaseEscalated, StartedAt: at.Add(-time.Hour), Escalation: e}
}

func TestDecisionClock(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	both := pollwarden.EscalationSpec{RemindAfter: 30 * time.Minute, ExpireAfter: 2 * time.Hour}
	cases := []struct {
		name      string
		spec      pollwarden.EscalationSpec
		reminders int
		at        time.Duration
		want      DecisionDue
	}{
		{"nothing configured", pollwarden.EscalationSpec{}, 0, 5 * time.Hour, DecisionDue{}},
		{"before the first reminder", both, 0, 10 * time.Minute, DecisionDue{Next: t0.Add(30 * time.Minute)}},
		{"first reminder due", both, 0, 30 * time.Minute, DecisionDue{Reminder: 1, Next: t0.Add(time.Hour)}},
		{"first reminder sent", both, 1, 40 * time.Minute, DecisionDue{Next: t0.Add(time.Hour)}},
		{"missed reminders collapse into one, numbered next", both, 1, 95 * time.Minute, DecisionDue{Reminder: 2, Next: t0.Add(2 * time.Hour)}},
		{"a first reminder looked for late is still the first", both, 0, 65 * time.Minute, DecisionDue{Reminder: 1, Next: t0.Add(90 * time.Minute)}},
		{"no reminder at the expiry itself", both, 3, 100 * time.Minute, DecisionDue{Next: t0.Add(2 * time.Hour)}},
		{"expiry due", both, 3, 2 * time.Hour, DecisionDue{Expire: true, Next: t0.Add(2 * time.Hour)}},
		{"expiry wins over a missed reminder", both, 0, 3 * time.Hour, DecisionDue{Expire: true, Next: t0.Add(3 * time.Hour)}},
		{"reminders are bounded", pollwarden.EscalationSpec{RemindAfter: time.Minute}, MaxReminders, 5 * time.Hour, DecisionDue{}},
		{"the last reminder", pollwarden.EscalationSpec{RemindAfter: time.Minute}, MaxReminders - 1, 5 * time.Hour, DecisionDue{Reminder: MaxReminders}},
		{"expiry alone", pollwarden.EscalationSpec{ExpireAfter: time.Hour}, 0, time.Minute, DecisionDue{Next: t0.Add(time.Hour)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := escalatedAt(t0, c.reminders, pollwarden.OptionExtend, pollwarden.OptionAbandon)
			if got := DecisionClock(op, c.spec, t0.Add(c.at)); got != c.want {
				t.Fatalf("DecisionClock at +%s = %+v, want %+v", c.at, got, c.want)
			}
		})
	}
}

func TestDecisionClockIgnoresOperationsNotAwaitingADecision(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	op := escalatedAt(t0, 0, pollwarden.OptionAbandon)
	op.Phase = pollwarden.PhaseWaiting
	if got := DecisionClock(op, pollwarden.EscalationSpec{ExpireAfter: time.Minute}, t0.Add(time.Hour)); got != (DecisionDue{}) {
		t.Fatalf("a waiting operation is due %+v", got)
	}
}

func TestExpiredRequestAppliesItsDefaultOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	spec := pollwarden.EscalationSpec{ExpireAfter: 2 * time.Hour}
	op := escalatedAt(t0, 0, pollwarden.OptionExtend, pollwarden.OptionAbandon)
	next, evs := Expire(op, spec, t0.Add(2*time.Hour))
	if len(evs) != 1 || evs[0].Kind != pollwarden.EventDecisionExpired {
		t.Fatalf("events %+v", evs)
	}
	if got, want := evs[0].Data.Decision, "decision request expired after 2h; default applied: abandon"; got != want {
		t.Fatalf("expiry text %q, want %q", got, want)
	}
	if op.Escalation.ExpiredAt != nil || next.Escalation.ExpiredAt == nil {
		t.Fatal("Expire must mark the copy, not the input")
	}
	// Recorded but not applied yet (a daemon stopped in between): still due.
	if !DecisionClock(next, spec, t0.Add(3*time.Hour)).Expire {
		t.Fatal("an expiry whose default was not applied is no longer due")
	}
	// Applied, yet still escalated (an abandon after a cancel offers no
	// abandon any more): nothing is due again.
	next.Escalation.Options = []pollwarden.Option{{ID: pollwarden.OptionInspect}}
	if got := DecisionClock(next, spec, t0.Add(3*time.Hour)); got != (DecisionDue{}) {
		t.Fatalf("an applied expiry is due %+v again", got)
	}
}

func TestExpiryOptionFallsBackToAbandon(t *testing.T) {
	spec := pollwarden.EscalationSpec{ExpireAfter: time.Hour, OnExpiry: pollwarden.OptionCancel}
	withCancel := escalatedAt(time.Now(), 0, pollwarden.OptionCancel, pollwarden.OptionAbandon)
	if got := ExpiryOption(withCancel, spec); got != pollwarden.OptionCancel {
		t.Fatalf("ExpiryOption = %s, want the contract's cancel_at_provider", got)
	}
	// authorization_denied offers no cancel: the default falls back.
	noCancel := escalatedAt(time.Now(), 0, pollwarden.OptionAbandon)
	if got := ExpiryOption(noCancel, spec); got != pollwarden.OptionAbandon {
		t.Fatalf("ExpiryOption = %s, want abandon when cancel is not offered", got)
	}
}

func TestRemindSaysHowLongTheRequestWaited(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	op := escalatedAt(t0, 0, pollwarden.OptionAbandon)
	next, evs := Remind(op, pollwarden.EscalationSpec{RemindAfter: 30 * time.Minute, ExpireAfter: 2 * time.Hour}, 1, t0.Add(30*time.Minute))
	if next.Escalation.Reminders != 1 || op.Escalation.Reminders != 0 {
		t.Fatalf("reminders: copy %d, input %d", next.Escalation.Reminders, op.Escalation.Reminders)
	}
	want := "reminder 1: decision request waiting for 30m; it expires at 2026-01-02T12:00:00Z and then applies abandon"
	if len(evs) != 1 || evs[0].Kind != pollwarden.EventDecisionReminder || evs[0].Data.Decision != want {
		t.Fatalf("events %+v, want one reminder %q", evs, want)
	}
}

// TestRemindersAreNumberedInOrderSent: a decision clock that looks later
// than one period after a (re-)escalation sends reminder 1, not 2, and the
// next falls in the next period, numbered 2; no burst for the periods
// missed.
func TestRemindersAreNumberedInOrderSent(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	spec := pollwarden.EscalationSpec{RemindAfter: 30 * time.Minute, ExpireAfter: 5 * time.Hour}
	op := escalatedAt(t0, 0, pollwarden.OptionAbandon)
	var sent []int
	for _, at := range []time.Duration{65 * time.Minute, 66 * time.Minute, 80 * time.Minute, 90 * time.Minute, 95 * time.Minute, 150 * time.Minute} {
		now := t0.Add(at)
		due := DecisionClock(op, spec, now)
		if due.Reminder == 0 {
			continue
		}
		var evs []pollwarden.Event
		op, evs = Remind(op, spec, due.Reminder, now)
		sent = append(sent, due.Reminder)
		if want := fmt.Sprintf("reminder %d:", due.Reminder); !strings.HasPrefix(evs[0].Data.Decision, want) {
			t.Fatalf("at +%s the event says %q, want %q", at, evs[0].Data.Decision, want)
		}
	}
	if fmt.Sprint(sent) != "[1 2 3]" {
		t.Fatalf("reminders sent %v, want [1 2 3] (at +65m, +90m, +150m)", sent)
	}
}
