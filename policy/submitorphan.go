package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// SubmitTurn decides what the holder of op's lease does with its
// submission now: send a pending attempt, re-send an interrupted one
// (only with the stored key), or escalate. A pending submission past the
// operation's deadline is not sent: a job submitted after the time it was
// wanted by is one nobody waits for any more, so a person closes it (no
// resubmit is offered: it would meet the same deadline).
// next is nil (and send false) when the record allows nothing.
func SubmitTurn(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (next *pollwarden.Operation, events []pollwarden.Event, send bool) {
	if !op.Phase.Submitting() || op.Submission == nil {
		return nil, nil, false
	}
	switch op.Submission.State {
	case pollwarden.SubmissionPending:
		if !now.Before(op.DeadlineAt) {
			next = op.Clone()
			why := fmt.Sprintf("the deadline %s passed before the submission was sent; nothing was sent",
				op.DeadlineAt.UTC().Format(time.RFC3339))
			next.Submission.Detail = why
			return next, submitEscalate(next, c, pollwarden.ReasonDeadlineExceeded, why, false, now), false
		}
		return SubmitSending(op, now)
	case pollwarden.SubmissionSent:
		next, events, send, _ = SubmitInterrupted(op, c, now)
		return next, events, send
	}
	return nil, nil, false
}

// SubmitOrphanDue is when a daemon may take over a submission it finds
// in PhaseSubmitting: grace (the lease's lifetime) after the last time a
// submitter was seen at work on it (the record's creation, the last send,
// the last answer). Before then its own submitter may still be about to
// claim it; after, that submitter has died or lost its lease, and the
// claim decides what the record allows.
func SubmitOrphanDue(op *pollwarden.Operation, grace time.Duration) time.Time {
	last := op.StartedAt
	if s := op.Submission; s != nil {
		if s.SentAt != nil && s.SentAt.After(last) {
			last = *s.SentAt
		}
		if s.AnsweredAt != nil && s.AnsweredAt.After(last) {
			last = *s.AnsweredAt
		}
	}
	return last.Add(grace)
}
