package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// MaxReminders bounds the reminders of one escalation: a request nobody
// answers is not allowed to page people for ever.
const MaxReminders = 10

// ExpiryActor is who applies a contract's default when a decision request
// expires: the daemon itself, never a person's name.
// It holds the approver role because the contract's author chose the
// default in advance; on_expiry can only name abandon or a cancel.
func ExpiryActor() pollwarden.Actor {
	return pollwarden.Actor{Name: "pollwarden (expiry)", Role: pollwarden.RoleApprover}
}

// DecisionDue is what an escalation awaiting a decision is due at a time.
type DecisionDue struct {
	// Reminder is the number of the reminder due now (1, 2, …); 0: none.
	Reminder int
	// Expire is true once the request has expired: the expiry is due to be
	// recorded (or, when already recorded, its default to be applied).
	Expire bool
	// Next is when something falls due next; zero when nothing ever will.
	Next time.Time
}

// DecisionClock says whether op's escalation is due a reminder or its
// expiry at now, under the contract's escalation block. It is pure: the
// daemon calls it for each escalated operation and records what it says.
// Reminders fall at At+k·RemindAfter, only before the expiry and at most
// MaxReminders; when several periods were missed (the daemon was stopped,
// or looked later than one period) only one is sent, and reminders are
// numbered 1, 2, … in the order they are sent, so the first one of an
// escalation is never skipped.
func DecisionClock(op *pollwarden.Operation, spec pollwarden.EscalationSpec, now time.Time) DecisionDue {
	e := op.Escalation
	if op.Phase != pollwarden.PhaseEscalated || e == nil {
		return DecisionDue{}
	}
	if e.ExpiredAt != nil {
		// Recorded as expired: the default is still to apply unless it
		// was (an abandon after a cancel leaves the operation escalated,
		// offering no abandon any more).
		if offers(e, ExpiryOption(op, spec)) {
			return DecisionDue{Expire: true, Next: now}
		}
		return DecisionDue{}
	}
	var expireAt time.Time
	if spec.ExpireAfter > 0 {
		expireAt = e.At.Add(spec.ExpireAfter)
		if !now.Before(expireAt) {
			return DecisionDue{Expire: true, Next: now}
		}
	}
	var due DecisionDue
	if spec.RemindAfter > 0 && e.Reminders < MaxReminders {
		passed := remindPeriod(e, spec, now)
		covered := max(e.RemindedPeriod, e.Reminders)
		if passed > covered {
			due.Reminder = e.Reminders + 1
		}
		k := max(passed, covered) + 1
		if next := e.At.Add(time.Duration(k) * spec.RemindAfter); k <= MaxReminders && (expireAt.IsZero() || next.Before(expireAt)) {
			due.Next = next
		}
	}
	if !expireAt.IsZero() && (due.Next.IsZero() || expireAt.Before(due.Next)) {
		due.Next = expireAt
	}
	return due
}

// Remind records reminder n of op's escalation: the record counts it, and
// the event, which the notifications turn into a message, says how long
// the request has waited.
func Remind(op *pollwarden.Operation, spec pollwarden.EscalationSpec, n int, now time.Time) (*pollwarden.Operation, []pollwarden.Event) {
	next := op.Clone()
	next.Escalation.Reminders = n
	if spec.RemindAfter > 0 {
		next.Escalation.RemindedPeriod = remindPeriod(op.Escalation, spec, now)
	}
	waited := pollwarden.ShortDuration(now.Sub(op.Escalation.At).Round(time.Second))
	text := fmt.Sprintf("reminder %d: decision request waiting for %s", n, waited)
	if spec.ExpireAfter > 0 {
		text += fmt.Sprintf("; it expires at %s and then applies %s", op.Escalation.At.Add(spec.ExpireAfter).UTC().Format(time.RFC3339), ExpiryOption(op, spec))
	}
	return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventDecisionReminder, pollwarden.EventData{
		Reason: op.Reason, Decision: text, State: op.LastState, Elapsed: elapsed(op, now),
		RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests, Options: op.Escalation.Options,
	})}
}

// Expire records that op's decision request expired undecided. The
// default is applied afterwards, as a decision of ExpiryActor through the
// same path as a person's; ExpiredAt on the record lets a daemon that
// stopped in between apply it once it is back.
func Expire(op *pollwarden.Operation, spec pollwarden.EscalationSpec, now time.Time) (*pollwarden.Operation, []pollwarden.Event) {
	next := op.Clone()
	t := now
	next.Escalation.ExpiredAt = &t
	text := fmt.Sprintf("decision request expired after %s; default applied: %s",
		pollwarden.ShortDuration(spec.ExpireAfter), ExpiryOption(op, spec))
	return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventDecisionExpired, pollwarden.EventData{
		Reason: op.Reason, Decision: text, Option: ExpiryOption(op, spec), State: op.LastState, Elapsed: elapsed(op, now),
		RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests,
	})}
}

// ExpiryOption is the option an expiry applies: the contract's on_expiry
// when this escalation offers it, abandon otherwise (an authorization
// failure, for one, offers no cancel).
func ExpiryOption(op *pollwarden.Operation, spec pollwarden.EscalationSpec) string {
	if spec.OnExpiry != "" && op.Escalation != nil && offers(op.Escalation, spec.OnExpiry) {
		return spec.OnExpiry
	}
	return pollwarden.OptionAbandon
}

func offers(e *pollwarden.Escalation, id string) bool {
	for _, o := range e.Options {
		if o.ID == id {
			return true
		}
	}
	return false
}

// remindPeriod is how many whole reminder periods of e have passed at now,
// at most MaxReminders. A record written before RemindedPeriod was kept
// counted its Reminders in periods, which DecisionClock takes as covered.
func remindPeriod(e *pollwarden.Escalation, spec pollwarden.EscalationSpec, now time.Time) int {
	return int(min(max(now.Sub(e.At), 0)/spec.RemindAfter, MaxReminders))
}
