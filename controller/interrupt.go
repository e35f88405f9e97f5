package controller

import (
	"context"
	"errors"

	"github.com/pollwarden/pollwarden"
)

// Resumed records that by took up the wait on operation id again, with
// its counters as they were, so that the story shows where a second
// process started. It changes nothing else. While another owner holds
// the lease (a process still polling, or one that died and whose lease has
// not expired yet) nothing is recorded and nil is returned: the wait must
// not be held up for a line of the story.
func (c *Controller) Resumed(ctx context.Context, id, by string) error {
	return c.note(ctx, id, pollwarden.EventResumed, by)
}

// Interrupted records that by, waiting in the foreground, was stopped
// (Ctrl-C) and nothing polls operation id until it is resumed: the story
// then says why the requests stop there. Like Resumed, it gives way to
// another owner's lease.
func (c *Controller) Interrupted(ctx context.Context, id, by string) error {
	return c.note(ctx, id, pollwarden.EventInterrupted, by)
}

func (c *Controller) note(ctx context.Context, id string, kind pollwarden.EventKind, by string) error {
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	e := pollwarden.Event{At: now, Kind: kind, Data: pollwarden.EventData{State: op.LastState,
		RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests, Detail: by}}
	err = c.save(ctx, op, []pollwarden.Event{e}, now)
	if errors.Is(err, pollwarden.ErrLeaseHeld) || errors.Is(err, pollwarden.ErrConflict) {
		return nil
	}
	return err
}
