package policy

import (
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/present"
)

// Escalate stops op with reason r and attaches the bounded decision a
// person is asked for (R19). It mutates op and returns the event to record.
func Escalate(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, detail string, now time.Time) []pollwarden.Event {
	return escalate(op, c, r, detail, askWaiting, now)
}

// escalate is Escalate for what q asks: its options built once, by
// options, and its message.
func escalate(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, detail string, q ask, now time.Time) []pollwarden.Event {
	op.Phase = pollwarden.PhaseEscalated
	op.Reason = r
	t := now
	op.FinishedAt = &t
	opts := options(op, c, r, q, now)
	msg := message(op, r, detail, opts, now)
	if q == askSubmission || q == askSubmissionNoResend {
		msg = submissionMessage(op, detail)
	}
	op.Escalation = &pollwarden.Escalation{
		ID:      nextEscalationID(op),
		Reason:  r,
		Message: msg,
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

// Options lists the bounded choices for a waiting stopped with reason r
// (R19, R21): options with askWaiting.
func Options(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, now time.Time) []pollwarden.Option {
	return options(op, c, r, askWaiting, now)
}

// ask is what an escalation asks, which decides the choices it offers.
type ask int

const (
	// askWaiting: a waiting stopped at a bound or a failure.
	askWaiting ask = iota
	// askSubmission: a submission that failed or whose fate is unknown,
	// where sending it again may be offered.
	askSubmission
	// askSubmissionNoResend: a submission that must not be sent again.
	askSubmissionNoResend
	// askAfterCancel: abandoned after a cancel whose end was not
	// observed; only looking is left.
	askAfterCancel
)

// options is the one builder of an escalation's choices. Each states its
// cost and the limit it would set. An authorization failure is never
// offered a retry with the same credential; cancel appears only when the
// contract documents a cancel action; resubmission only for a submission
// that may be sent again. The words are package present's.
func options(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, q ask, now time.Time) []pollwarden.Option {
	var opts []pollwarden.Option
	submission := q == askSubmission || q == askSubmissionNoResend
	switch {
	case q == askSubmission:
		opts = append(opts, pollwarden.Option{ID: pollwarden.OptionResubmit,
			Label: present.ResubmitLabel(op.Submission.IdempotencyKey != ""), GrantsAuthority: true})
	case submission, q == askAfterCancel:
	case c.Status.EachCallNeedsApproval() && op.ApprovedCalls <= 0 && r == pollwarden.ReasonIntegrationFailure:
		opts = append(opts, pollwarden.Option{
			ID:              pollwarden.OptionApproveCall,
			Label:           approveCallLabel(op, c),
			GrantsAuthority: true,
		})
	case r != pollwarden.ReasonAuthorizationDenied:
		opts = append(opts, extendOption(op, c, r, now))
	}
	if q == askWaiting && c.Cancel != nil && r != pollwarden.ReasonAuthorizationDenied && (!op.Cancel.InForce() || c.Cancel.Idempotent) {
		opts = append(opts, pollwarden.Option{
			ID:              pollwarden.OptionCancel,
			Label:           present.CancelLabel(c.Cancel.Method, substituteJob(c.Cancel.URL, op)),
			GrantsAuthority: true,
		})
	}
	// A submission's console shows a job only once the provider named it.
	if c.Escalation.ConsoleURL != "" && (!submission || op.ProviderJobID != "") {
		opts = append(opts, pollwarden.Option{
			ID:    pollwarden.OptionInspect,
			Label: present.InspectLabel(substituteJob(c.Escalation.ConsoleURL, op)),
		})
	}
	if q != askAfterCancel {
		opts = append(opts, pollwarden.Option{ID: pollwarden.OptionAbandon, Label: present.AbandonLabel(op.Cancel.InForce(), submission)})
	}
	return opts
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

// message is the decision request of R19, worded by package present
// from the escalation as data.
func message(op *pollwarden.Operation, r pollwarden.Reason, detail string, opts []pollwarden.Option, now time.Time) string {
	q := present.Question{Reason: r, Detail: detail, Options: opts}
	if op.Cancel != nil {
		q.Cancel = CancelSummary(op.Cancel)
	}
	return present.DecisionRequest(op, q, now)
}

func elapsed(op *pollwarden.Operation, now time.Time) string { return present.Elapsed(op, now) }

// substituteJob fills a contract URL for a person to read
// (present.ConsoleLink), or leaves the template as written when it does
// not expand.
func substituteJob(tmpl string, op *pollwarden.Operation) string {
	if out, ok := present.ConsoleLink(tmpl, op); ok {
		return out
	}
	return tmpl
}
