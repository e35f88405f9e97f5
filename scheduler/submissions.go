package scheduler

import (
	"context"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// submitSweepEvery is how often, in Polls, the loop looks for operations
// left in PhaseSubmitting. They are rare (a submitter died between
// recording a submission and recording its answer) and wait a lease's
// lifetime before they are taken over anyway, so a look every few Polls
// is soon enough and costs one small query.
const submitSweepEvery = 5

// sweepSubmissions starts controller.StepSubmission for each operation in
// PhaseSubmitting that is not in flight or held: it re-sends an orphaned
// submission only with the stored idempotency key, else escalates it for
// a person. One whose submitter may still be alive answers with a time to
// look again, kept as a hold.
func (l *loop) sweepSubmissions(ctx context.Context, now time.Time) {
	s := l.s
	ops, err := s.store.OperationList(ctx, pollwarden.ListParams{Phase: pollwarden.PhaseSubmitting, Limit: s.batch})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("listing submissions left unanswered failed; retrying", "error", err)
		}
		return
	}
	for _, op := range ops {
		if _, held := s.held(op, now); held {
			continue
		}
		ex, ok, err := s.contractFor(ctx, op)
		if err != nil {
			continue // the store could not be read: looked at again next sweep
		}
		if !ok {
			// Nothing can be sent without it; looked at again next sweep.
			if !l.missing[op.ID] {
				l.missing[op.ID] = true
				s.log.Warn("contract not in the current set; a submission left unanswered waits for it",
					"operation", op.ID, "contract", op.Contract)
			}
			continue
		}
		delete(l.missing, op.ID)
		if !s.started(op.ID) {
			return // no slot free: the next sweep comes soon
		}
		l.steps.Add(1)
		c := l.ceiling(ex)
		go func() {
			defer l.steps.Done()
			s.stepSubmission(withCeiling(ctx, c), ex, op)
		}()
	}
}

// stepSubmission runs one controller.StepSubmission and logs a takeover.
func (s *Scheduler) stepSubmission(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) {
	res, err := s.ctl.StepSubmission(ctx, ex, op)
	if err == nil && res.Op != nil && (res.Sent || !res.Op.Phase.Submitting()) {
		s.log.Warn("took over a submission left unanswered", "operation", op.ID, "contract", op.Contract,
			"phase", res.Op.Phase, "reason", res.Op.Reason, "sent", res.Sent)
	}
	s.stepEnded(ctx, op, res, err, s.clock.Now())
}
