package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/internal/present"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
)

func (s *server) get(ctx context.Context, id string) (*pollwarden.Operation, error) {
	if id == "" {
		return nil, errors.New("operation_id is required: the one watch_job returned (list_jobs lists them)")
	}
	op, err := s.ops.Get(ctx, s.who(ctx), id)
	if err != nil {
		return nil, toolError(err)
	}
	return op, nil
}

// toolError is a use case's error as a model reads it: the problems in
// words, with where to go on from a missing operation; anything that is
// not a refusal as an internal error.
func toolError(err error) error {
	p, ok := operations.AsProblems(err)
	switch {
	case !ok:
		return internal(err)
	case p.Kind == operations.NotFound:
		return fmt.Errorf("%s; register the job with watch_job first (list_jobs lists the known ones)", p.Error())
	}
	msgs := make([]string, len(p.List))
	for i, pr := range p.List {
		msgs[i] = pr.Message
		if pr.Widens {
			msgs[i] = fmt.Sprintf("%s: %s, after the job escalates: call request_extension to ask (or omit %s for the contract's)",
				pr.Field, pr.Message, pr.Field)
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// answer is the record with guidance in words, its status URL cut.
func (s *server) answer(op *pollwarden.Operation) JobAnswer {
	return JobAnswer{Outcome: pollwarden.OutcomeOf(op), Guidance: guidance(op, s.ops.Clock().Now())}
}

// answerFor is answer as the caller of ctx reads it: the status URL whole
// for the agent that gave it.
func (s *server) answerFor(ctx context.Context, op *pollwarden.Operation) JobAnswer {
	a := s.answer(op)
	a.Outcome = s.who(ctx).Outcome(op)
	return a
}

func guidance(op *pollwarden.Operation, now time.Time) string {
	switch op.Phase {
	case pollwarden.PhaseWaiting:
		return fmt.Sprintf("Still waiting (last state %s). The next status request is due %s, %s; %d of %d status requests used, deadline %s. Nothing changes before then: call wait_job again, it holds until the phase changes.",
			orNone(op.LastState), due(op, now), because(op.NextPollSource), op.StatusRequestsUsed, op.MaxStatusRequests, op.DeadlineAt.UTC().Format(time.RFC3339))
	case pollwarden.PhaseCancelling:
		return fmt.Sprintf("An approver asked the provider to cancel the job (%s). pollwarden keeps observing it until the provider reports an end state; that state decides the outcome. %d of %d status requests used, deadline %s: call wait_job again.",
			policy.CancelSummary(op.Cancel), op.StatusRequestsUsed, op.MaxStatusRequests, op.DeadlineAt.UTC().Format(time.RFC3339))
	case pollwarden.PhaseSucceeded:
		return "The job succeeded; its validated result is in result."
	case pollwarden.PhaseFailed:
		return "The provider reported that the job failed; its error is in provider_error. Do not resubmit on your own: tell the user."
	case pollwarden.PhaseCancelled:
		return "The job was cancelled."
	case pollwarden.PhaseExpired:
		return "The job expired at the provider."
	case pollwarden.PhaseEscalated:
		return stopped(op) + "You cannot choose an option that grants authority: tell the user; request_extension records a request for more time or requests.\n" + relay(op)
	}
	return ""
}

// stopped opens what wait_job and a task say of an escalated operation:
// that a person must decide, and the decision request as stored. The
// message already states the facts and lists each option with its cost;
// repeating the options would only lengthen it.
func stopped(op *pollwarden.Operation) string {
	msg := fmt.Sprintf("Waiting stopped (%s) and a person must decide what happens next.", op.Reason)
	if e := op.Escalation; e != nil {
		return msg + "\n" + e.Message + "\n"
	}
	return msg + " "
}

// relay is what the agent passes on to its user for an escalation: where a
// person decides (the daemon's console page of the operation) and the
// command that decides on the machine holding the store, with the
// options offered. The agent itself can do neither.
func relay(op *pollwarden.Operation) string {
	options := "OPTION"
	if e := op.Escalation; e != nil && len(e.Options) > 0 {
		ids := make([]string, len(e.Options))
		for i, o := range e.Options {
			ids[i] = o.ID
		}
		options = "OPTION (one of " + strings.Join(ids, ", ") + ")"
	}
	id := display.Value(op.ID)
	return fmt.Sprintf("Tell the user how to decide: in pollwarden's web console, page /ui/operations/%s of the pollwarden daemon (signed in with an approver token), or on the machine that holds pollwarden's store: pollwarden decide %s %s --by NAME.",
		url.PathEscape(op.ID), id, options)
}

// due says when the next status request is sent, "now" or "in 40s" with
// its time, for wait_job's guidance and a task's status alike.
func due(op *pollwarden.Operation, now time.Time) string {
	if next := op.NextPollAt.Sub(now).Round(time.Second); next > 0 {
		return "in " + next.String() + " (" + op.NextPollAt.UTC().Format(time.RFC3339) + ")"
	}
	return "now"
}

// because says who chose the next request's time, in the words every
// medium uses (present.DelaySource).
func because(src pollwarden.DelaySource) string {
	if w := present.DelaySource(src); w != "" {
		return "set by " + w
	}
	return "on the contract's backoff schedule"
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

func (s *server) names() string {
	n := s.ops.Contracts().Names()
	if len(n) == 0 {
		return "(none)"
	}
	return strings.Join(n, ", ")
}

// internal hides a store error's detail behind a stable message; store
// errors never carry secrets, but they are not actionable for a model.
func internal(err error) error {
	return fmt.Errorf("internal error in pollwarden (%v); try again, and tell the user if it persists", err)
}
