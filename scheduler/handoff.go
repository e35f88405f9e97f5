package scheduler

import (
	"context"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
)

// accept lets creates hand their first steps over while Run runs with ctx.
func (s *Scheduler) accept(ctx context.Context) {
	s.mu.Lock()
	s.runCtx, s.accepting = ctx, true
	s.mu.Unlock()
}

// Reserve holds one of the scheduler's step slots for the first step of
// operation id, which a create is about to claim in its own write
// (controller.CreateClaim): the create's request then goes out within the
// same concurrency limit as every step. It refuses, and the create keeps
// its old path (the scheduler steps the new record when it is handed
// over by Changed), while Run is not running, when no slot is free or
// the last walk left due work waiting for one (older work goes first),
// and for a contract with a request-rate ceiling, which only the loop's
// walk keeps. A reserved slot must be given to Start or Cancel.
func (s *Scheduler) Reserve(ex *contract.Loaded, id string) bool {
	if ex.Spec().Limits.MaxRequestsPerSecond > 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accepting || s.walkStopped {
		return false
	}
	if _, busy := s.inflight[id]; busy || len(s.inflight) >= s.concurrency {
		return false
	}
	s.inflight[id] = struct{}{}
	s.handed.Add(1)
	return true
}

// Start runs the first step reserved for op (its record as created) in
// its slot, and frees the slot as any step's end does; Run waits for it
// before returning.
func (s *Scheduler) Start(op *pollwarden.Operation, step func(context.Context) (controller.StepResult, error)) {
	if s.observer != nil && !op.NextPollAt.IsZero() {
		// A handed step is a step started: its lateness counts like the
		// walk's (wall-clock difference, like the due times themselves).
		s.observer.Lateness(max(0, s.clock.Now().Round(0).Sub(op.NextPollAt.Round(0))))
	}
	s.mu.Lock()
	ctx := s.runCtx
	s.mu.Unlock()
	go func() {
		defer s.handed.Done()
		res, err := step(ctx)
		s.stepEnded(ctx, op, res, err, s.clock.Now())
	}()
}

// Cancel frees a slot Reserve held for id, unused (the create failed).
func (s *Scheduler) Cancel(id string) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
	s.handed.Done()
	s.ring()
}
