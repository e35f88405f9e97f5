package scheduler

import (
	"context"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
)

// maxSkipRows bounds, in batches, how far past operations it cannot start
// yet (contract missing, provider ceiling reached) one look reads to find
// work it can start.
const maxSkipRows = 15

// loop is the state of one Run, touched only by its goroutine.
type loop struct {
	s     *Scheduler
	steps *sync.WaitGroup

	// cands are the operations of the last fetch not started yet, in due
	// order: those due then, and those coming due within Poll. Between
	// fetches the loop walks them again (a slot freed, a ceiling refilled,
	// the next one came due) instead of reading the store once per step.
	// A candidate read a while ago may be stale; the step's claim reloads
	// it under the lease, so that costs a claim, never a wrong request.
	cands []*pollwarden.Operation
	// freshUntil is Poll after the last fetch: then the store is read
	// again whatever the candidates, to see other processes' changes.
	freshUntil time.Time
	// dueAt is the next time something not among the candidates may come
	// due (the due time of the last row of a full fetch, past which
	// nothing was read; a hold's end); it matters only when the last walk
	// was not stopped: a stopped walk has older due work waiting already.
	dueAt time.Time
	// stopped: the last walk stopped at a candidate waiting for a slot or
	// for catch-up pacing, so nothing newer could start either.
	stopped bool
	// more: the last fetch was all due work and full, so more may wait
	// behind it.
	more bool
	// limit is how many rows the last fetch asked for; passed holds the
	// due operations walks passed over since (contract missing, ceiling
	// reached), which the next fetch reads past.
	// readPast is how many of those rows were for passed-over ones.
	limit, readPast int
	passed          map[string]struct{}
	// expect is when the loop planned to wake; waking much later is a
	// stall.
	expect time.Time
	// upSince is when Run started or last resumed from a stall: an
	// operation due since then is late only because the scheduler is
	// busy, and its step is told so (policy.Uptime), so it is not
	// spread like a wake-up missed while no process was running (R9).
	upSince time.Time
	// submitAt is when the next fetch also looks for submissions left
	// unanswered (sweepSubmissions).
	submitAt time.Time
	// missing holds operations whose missing contract was logged once.
	missing  map[string]bool
	ceilings map[string]*ceiling

	// Catch-up pacing (docs/decisions.md, "Scheduler"): while pace is set,
	// operations due at or before backlogUntil start through it.
	pace         *rate.Limiter
	backlogUntil time.Time
	catchUpWhy   string
	catchUpFrom  time.Time
	catchUpDelay bool // pacing held a start back in this episode
	catchUpN     int  // backlog steps started in this episode

	// togetherFrom is when walks began waiting for free slots to start
	// steps together (waitTogether); zero while none waits.
	togetherFrom time.Time
}

func newLoop(s *Scheduler, steps *sync.WaitGroup) *loop {
	return &loop{s: s, steps: steps, missing: map[string]bool{}, passed: map[string]struct{}{},
		ceilings: map[string]*ceiling{}}
}

// iterate fetches when needed, starts what it may and returns when to
// look again.
func (l *loop) iterate(ctx context.Context) time.Time {
	s := l.s
	now := s.clock.Now()
	if !l.expect.IsZero() {
		// Wall-clock difference: a suspended machine stops the monotonic
		// clock, not the wall clock the due times are written in.
		if late := now.Round(0).Sub(l.expect.Round(0)); late > stallAfter {
			s.log.Warn("scheduler woke late; pacing the operations overdue by now", "late", late.Round(time.Millisecond))
			l.upSince = now.Round(0)
			l.startCatchUp(now, "stall")
		}
		l.expect = time.Time{}
	}
	arrived := s.takeArrivals()
	if l.needFetch(now) {
		// The read sees every arrival: Changed runs after its commit.
		l.fetch(ctx, now)
		if ctx.Err() != nil {
			return now
		}
		if !now.Before(l.submitAt) {
			l.submitAt = now.Add(submitSweepEvery * s.poll)
			l.sweepSubmissions(ctx, now)
		}
	} else {
		l.admit(arrived)
	}
	return l.walk(ctx, now)
}

// admit adds records Changed handed over to the candidates, in due order,
// each replacing the candidate of the same operation read before.
func (l *loop) admit(ops []*pollwarden.Operation) {
	for _, op := range ops {
		l.cands = slices.DeleteFunc(l.cands, func(c *pollwarden.Operation) bool { return c.ID == op.ID })
		i, _ := slices.BinarySearchFunc(l.cands, op, func(c, t *pollwarden.Operation) int {
			if c.NextPollAt.After(t.NextPollAt) {
				return 1
			}
			return -1 // after every candidate due at the same time
		})
		l.cands = slices.Insert(l.cands, i, op)
	}
}

// needFetch: a Wake, stale candidates, or (when the last walk could start
// everything it had) more work than the candidates or work that came due.
// While a walk is stopped, the candidates are older due work than anything
// a read would add, so they are worked through first.
func (l *loop) needFetch(now time.Time) bool {
	s := l.s
	if s.woken.Swap(false) || !now.Before(l.freshUntil) {
		return true
	}
	if l.stopped {
		return false
	}
	s.mu.Lock()
	soonest := s.soonest
	s.mu.Unlock()
	return (len(l.cands) == 0 && l.more) || !now.Before(l.dueAt) || (!soonest.IsZero() && !now.Before(soonest))
}

// fetch reads the due operations, oldest due first, and the next due time
// within Poll. It reads past the operations in flight and, up to a bound,
// past those the last walk could not start, so that they cannot hide work
// behind them.
func (l *loop) fetch(ctx context.Context, now time.Time) {
	s := l.s
	s.mu.Lock()
	s.soonest = time.Time{} // what ended before this read is in it
	clear(s.ended)
	inflight := len(s.inflight)
	for id, h := range s.holds {
		if !now.Before(h.until) {
			delete(s.holds, id)
		}
	}
	s.mu.Unlock()
	l.readPast = min(len(l.passed), maxSkipRows*s.batch)
	l.limit = s.batch + inflight + l.readPast
	clear(l.passed)
	l.freshUntil = now.Add(s.poll)
	l.dueAt = l.freshUntil
	ops, err := s.store.OperationList(ctx, pollwarden.ListParams{DueBefore: now.Add(s.poll), Limit: l.limit})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("listing due operations failed; retrying", "error", err, "retry_in", s.poll)
		}
		clear(l.cands)
		l.cands, l.more = l.cands[:0], false
		return
	}
	due := len(ops)
	for i, op := range ops {
		if op.NextPollAt.After(now) {
			due = i
			break
		}
	}
	l.more = due == len(ops) && len(ops) == l.limit
	if due < len(ops) && len(ops) == l.limit {
		// Nothing due after the last row read is known: look again then.
		l.dueAt = ops[len(ops)-1].NextPollAt
	}
	clear(l.cands)
	l.cands = ops
}

// walk starts the candidates it may, in due order, and keeps the rest for
// the next walk. It stops at the first one that waits for a free slot or
// for catch-up pacing (everything behind it waits too: the order is the
// due order), escalates those whose contract is missing (see
// controller.StepWithoutContract), and passes over those whose provider
// ceiling is reached (others may go meanwhile).
func (l *loop) walk(ctx context.Context, now time.Time) time.Time {
	s := l.s
	// next is when to look again if the walk runs to the end: when the
	// next operation comes due, a step asked, a hold ends or a ceiling
	// refills. A stopped walk waits only for what stopped it (a step's
	// end rings the loop; pacing says when), and for freshness.
	next := l.dueAt
	s.mu.Lock()
	if !s.soonest.IsZero() {
		next = earlier(next, s.soonest)
	}
	s.mu.Unlock()
	var paced time.Time
	var blocked map[string]bool // contracts whose ceiling is reached, this walk
	var starts []controller.StepStart
	keep := l.cands[:0]
	stop := len(l.cands) // index of the candidate the walk stopped at
	notDue := false      // it stopped there because that one is not due yet
	for i, op := range l.cands {
		if op.NextPollAt.After(now) {
			// Not due yet, nor anything after it (due order): wake then.
			next = earlier(next, op.NextPollAt)
			stop, notDue = i, true
			break
		}
		if until, held := s.held(op, now); held {
			// In flight or stale (zero until), or asked to be retried
			// later: read it again from the store when that time comes.
			if !until.IsZero() {
				next = earlier(next, until)
				l.dueAt = earlier(l.dueAt, until)
			}
			continue
		}
		ex, ok, err := s.contractFor(ctx, op)
		if err != nil {
			continue // the store could not be read: looked at again next walk
		}
		if !ok {
			// Escalated naming the contract rather than left waiting for
			// ever. Nothing is sent, so neither a ceiling nor pacing
			// applies; the store write takes a slot like a step.
			if !s.slotFree() || !s.started(op.ID) {
				stop = i
				break
			}
			l.noContract(op)
			l.steps.Add(1)
			go func() {
				defer l.steps.Done()
				s.stepWithoutContract(ctx, op)
			}()
			continue
		}
		if l.missing[op.ID] {
			delete(l.missing, op.ID)
			s.log.Info("contract is back; stepping the operation again", "operation", op.ID, "contract", op.Contract)
		}
		if blocked[op.Contract] {
			keep = append(keep, op)
			l.passed[op.ID] = struct{}{}
			continue
		}
		if !s.slotFree() || l.waitTogether(i, now, len(starts)) {
			stop = i // a step's end rings the loop
			break
		}
		c := l.ceiling(ex)
		var reserved *rate.Reservation
		if c != nil {
			reserved = c.start.ReserveN(now, 1)
			if d := reserved.DelayFrom(now); d > 0 {
				reserved.CancelAt(now)
				if blocked == nil {
					blocked = map[string]bool{}
				}
				blocked[op.Contract] = true
				next = earlier(next, now.Add(d))
				keep = append(keep, op)
				l.passed[op.ID] = struct{}{}
				continue
			}
		}
		backlog := l.isBacklog(op)
		if l.pace != nil && !backlog {
			l.endCatchUp(now)
		}
		if backlog {
			r := l.pace.ReserveN(now, 1)
			if d := r.DelayFrom(now); d > 0 {
				r.CancelAt(now)
				if reserved != nil {
					reserved.CancelAt(now)
				}
				l.catchUpHeld(now)
				paced = now.Add(d)
				stop = i
				break
			}
			l.catchUpN++
		}
		if !s.started(op.ID) { // a create's first step (Reserve) took the last slot
			if reserved != nil {
				reserved.CancelAt(now)
			}
			stop = i
			break
		}
		l.steps.Add(1)
		up := policy.Uptime{Since: l.upSince}
		if s.startTogether > 1 {
			starts = append(starts, controller.StepStart{Ctx: withCeiling(ctx, c), Ex: ex, Op: op, Up: up})
			continue
		}
		go func() {
			defer l.steps.Done()
			s.step(withCeiling(ctx, c), ex, op, up)
		}()
	}
	if len(starts) > 0 {
		// The steps started by this walk claim together (stepMany).
		go s.stepMany(ctx, l.steps, starts)
	}
	stopped := stop < len(l.cands) && !notDue
	if len(keep) < stop { // something before the stop was dropped: close the gap
		keep = append(keep, l.cands[stop:]...)
		clear(l.cands[len(keep):])
	} else {
		keep = l.cands
	}
	l.cands = keep
	if l.pace != nil && !l.more && !slices.ContainsFunc(keep, l.isBacklog) {
		l.endCatchUp(now) // every backlog operation has been started
	}
	switch {
	case len(keep) == 0 && l.more:
		// Everything fetched was started and more is due: read on now.
		next = now
	case !stopped && l.more && len(l.passed) > 0 && l.readPast < maxSkipRows*s.batch:
		// Only operations that cannot start yet are left, and more is due
		// behind them: read on now, past them.
		l.dueAt, next = now, now
	}
	l.stopped = stopped
	s.mu.Lock()
	s.walkStopped = stopped
	s.mu.Unlock()
	switch {
	case !paced.IsZero():
		next = paced
	case stopped:
		next = l.freshUntil
	}
	if !l.togetherFrom.IsZero() {
		next = earlier(next, l.togetherFrom.Add(s.startLinger))
	}
	return earlier(next, l.freshUntil)
}

// waitTogether reports whether the walk, about to start candidate i
// with started steps started so far, waits instead for more free slots:
// only before its first start, while other steps are in flight, and for
// at most startLinger from when a walk first waited (togetherFrom).
func (l *loop) waitTogether(i int, now time.Time, started int) bool {
	s := l.s
	if started > 0 || s.startTogether <= 1 {
		return false
	}
	if s.slotsFree(min(s.startTogether, l.dueFrom(i, now))) {
		l.togetherFrom = time.Time{}
		return false
	}
	if l.togetherFrom.IsZero() {
		l.togetherFrom = now
	}
	if now.Before(l.togetherFrom.Add(s.startLinger)) {
		return true
	}
	l.togetherFrom = time.Time{}
	return false
}

// dueFrom is how many candidates from index i on are due at now (the
// candidates are in due order).
func (l *loop) dueFrom(i int, now time.Time) int {
	n, _ := slices.BinarySearchFunc(l.cands[i:], now, func(c *pollwarden.Operation, t time.Time) int {
		if c.NextPollAt.After(t) {
			return 1
		}
		return -1
	})
	return n
}

func (l *loop) noContract(op *pollwarden.Operation) {
	if l.missing[op.ID] {
		return
	}
	l.missing[op.ID] = true
	l.s.log.Warn("contract not in the current set; escalating the operation, which is due",
		"operation", op.ID, "contract", op.Contract)
}

// isBacklog reports whether op's start is paced: catch-up is on and op was
// due when it began.
func (l *loop) isBacklog(op *pollwarden.Operation) bool {
	return l.pace != nil && !op.NextPollAt.After(l.backlogUntil)
}

// startCatchUp makes every operation due by now backlog, paced at
// CatchUpRate from a full bucket.
func (l *loop) startCatchUp(now time.Time, why string) {
	s := l.s
	if s.catchUpRate <= 0 {
		return
	}
	l.pace = rate.NewLimiter(rate.Limit(s.catchUpRate), s.catchUpBurst)
	l.backlogUntil, l.catchUpWhy, l.catchUpFrom = now, why, now
	l.catchUpDelay, l.catchUpN = false, 0
}

// catchUpHeld notes (and logs once per episode) that pacing held a start.
func (l *loop) catchUpHeld(now time.Time) {
	if l.catchUpDelay {
		return
	}
	l.catchUpDelay = true
	l.s.log.Info("pacing overdue operations", "after", l.catchUpWhy, "overdue_since_before", l.backlogUntil,
		"starts_per_second", l.s.catchUpRate, "burst", l.s.catchUpBurst)
}

func (l *loop) endCatchUp(now time.Time) {
	if l.catchUpDelay {
		l.s.log.Info("caught up with overdue operations", "after", l.catchUpWhy, "started", l.catchUpN,
			"took", now.Sub(l.catchUpFrom).Round(time.Millisecond))
	}
	l.pace = nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
