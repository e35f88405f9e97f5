package controller

import (
	"context"
	"errors"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// Progress is told, about once a second while waiting, the record and the
// time of the next check, so a door can show a live line.
type Progress func(op *pollwarden.Operation, next time.Time)

// Wait steps operation id until it is final (terminal or escalated),
// sleeping between steps without holding the lease. A late wake-up simply
// takes the next step: the gate checks the deadline first and a step sends
// at most one request, so missed intervals are never made up (R9). It
// returns ctx.Err() with the last record if ctx ends first.
func (c *Controller) Wait(ctx context.Context, ex *contract.Loaded, id string, progress Progress) (*pollwarden.Operation, error) {
	var last *pollwarden.Operation
	for {
		res, err := c.Step(ctx, ex, id)
		switch {
		case errors.Is(err, pollwarden.ErrLeaseLost), errors.Is(err, pollwarden.ErrConflict):
			// Another owner moved the record on; reload and look again.
			res = StepResult{Op: last, Until: c.clock.Now().Add(c.leaseRetry)}
		case err != nil:
			return last, err
		}
		if res.Op != nil {
			last = res.Op
		}
		if res.Until.IsZero() {
			return last, nil
		}
		if err := c.sleepUntil(ctx, res.Until, last, progress); err != nil {
			return last, err
		}
	}
}

func (c *Controller) sleepUntil(ctx context.Context, until time.Time, op *pollwarden.Operation, progress Progress) error {
	for {
		left := until.Sub(c.clock.Now())
		if progress != nil && op != nil {
			progress(op, until)
		}
		if left <= 0 {
			return ctx.Err()
		}
		if err := c.clock.Sleep(ctx, min(left, time.Second)); err != nil {
			return err
		}
	}
}
