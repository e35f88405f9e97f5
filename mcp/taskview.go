package mcp

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/mcptask"
)

// How an operation reads as a task, in either wire shape.

// abandoned reports whether op ended by an abandon decision: it failed
// with an escalation record (after an escalation, or abandoned while
// waiting), which the provider's own failure never carries.
func abandoned(op *pollwarden.Operation) bool {
	return op.Phase == pollwarden.PhaseFailed && op.Escalation != nil
}

// taskStatus maps a phase onto a task's status (2025-11-25 meaning).
func taskStatus(op *pollwarden.Operation) mcptask.Status {
	switch {
	case op.Phase == pollwarden.PhaseWaiting:
		return mcptask.Working
	case op.Phase == pollwarden.PhaseEscalated:
		return mcptask.InputRequired
	case op.Phase == pollwarden.PhaseSucceeded:
		return mcptask.Completed
	case op.Phase == pollwarden.PhaseCancelled, abandoned(op):
		return mcptask.Cancelled
	}
	return mcptask.Failed // failed, expired, and any phase added later
}

// extStatus is the extension's: a job that failed or expired is a tool
// result (completed), since failed is kept for JSON-RPC errors there.
func extStatus(op *pollwarden.Operation) mcptask.Status {
	if st := taskStatus(op); st != mcptask.Failed {
		return st
	}
	return mcptask.Completed
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func lastUpdated(op *pollwarden.Operation) time.Time {
	t := op.StartedAt
	for _, u := range []*time.Time{op.LastHTTPAt, op.FinishedAt} {
		if u != nil && u.After(t) {
			t = *u
		}
	}
	return t
}

// ttl follows the deadline: an approver's extension lengthens it.
func ttl(op *pollwarden.Operation) *int64 {
	ms := (op.DeadlineAt.Sub(op.StartedAt) + taskRetention).Milliseconds()
	return &ms
}

// pollInterval is the true time to pollwarden's next status request
// (nothing can change before it; no margin, so a host looks when the
// request goes out), a second once it is due, or a person's pace while a
// decision is awaited.
func pollInterval(op *pollwarden.Operation, now time.Time) *int64 {
	var d time.Duration
	switch op.Phase {
	case pollwarden.PhaseWaiting:
		if d = op.NextPollAt.Sub(now); d <= 0 {
			d = duePoll
		}
	case pollwarden.PhaseEscalated:
		d = decisionPoll
	default:
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// taskMessage is a task's statusMessage: what to do, which is nothing.
func taskMessage(op *pollwarden.Operation, now time.Time) string {
	switch op.Phase {
	case pollwarden.PhaseWaiting:
		return fmt.Sprintf("Still waiting (last state %s). pollwarden sends the next status request %s, %s; nothing can change before then, and looking at this task costs the provider nothing. %d of %d status requests used, deadline %s. Nothing to do: look again after the poll interval.",
			orNone(op.LastState), due(op, now), because(op.NextPollSource), op.StatusRequestsUsed, op.MaxStatusRequests, op.DeadlineAt.UTC().Format(time.RFC3339))
	case pollwarden.PhaseEscalated:
		return stopped(op) + fmt.Sprintf("This task takes no input from you and you cannot decide it: tell the user. An approver decides with `pollwarden decide %s OPTION` or the daemon's API; request_extension records a request for more time or requests.", op.ID)
	}
	if abandoned(op) {
		if op.Reason == "" {
			return "The wait was abandoned while the job was running; pollwarden no longer watches this job, and nothing was cancelled at the provider."
		}
		return "The wait was abandoned (" + string(op.Reason) + "); pollwarden no longer watches this job, and nothing was cancelled at the provider."
	}
	return guidance(op, now)
}

func coreTaskOf(op *pollwarden.Operation, now time.Time) mcptask.Task {
	return mcptask.Task{TaskID: op.ID, Status: taskStatus(op), StatusMessage: taskMessage(op, now),
		CreatedAt: stamp(op.StartedAt), LastUpdatedAt: stamp(lastUpdated(op)),
		TTL: ttl(op), PollInterval: pollInterval(op, now)}
}

func taskV2(op *pollwarden.Operation, now time.Time) mcptask.TaskV2 {
	return mcptask.TaskV2{TaskID: op.ID, Status: extStatus(op), StatusMessage: taskMessage(op, now),
		CreatedAt: stamp(op.StartedAt), LastUpdatedAt: stamp(lastUpdated(op)),
		TTLMs: ttl(op), PollIntervalMs: pollInterval(op, now)}
}
