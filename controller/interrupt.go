package controller

import (
	"context"

	"github.com/pollwarden/pollwarden"
)

// Resumed records that by took up the wait on operation id again, with
// its counters as they were, so that the story shows where a second
// process started. It changes nothing else.
func (c *Controller) Resumed(ctx context.Context, id, by string) error {
	return c.note(ctx, id, pollwarden.EventResumed, by)
}

// Interrupted records that by, waiting in the foreground, was stopped
// (Ctrl-C) and nothing polls operation id until it is resumed: the story
// then says why the requests stop there.
func (c *Controller) Interrupted(ctx context.Context, id, by string) error {
	return c.note(ctx, id, pollwarden.EventInterrupted, by)
}

func (c *Controller) note(ctx context.Context, id string, kind pollwarden.EventKind, by string) error {
	return c.record(ctx, id, func(op *pollwarden.Operation) pollwarden.Event {
		return pollwarden.Event{At: c.clock.Now(), Kind: kind, Data: pollwarden.EventData{State: op.LastState,
			RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests, Detail: by}}
	})
}
