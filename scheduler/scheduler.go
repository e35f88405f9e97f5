// Package scheduler runs many operations at once for the daemon. The
// controller knows how to take one step of one operation (R11, R22); a
// daemon holding thousands of operations also needs someone to decide which
// operation to step next, how many at a time, and how fast the provider may
// be asked. That is this package, and only that: every rule about an
// operation stays in controller.Step.
//
// The scheduler asks the store for the operations that are due, oldest due
// first (pollwarden.ListParams.DueBefore), starts one Step for each with a
// bounded number in flight, and sleeps until the next one is due, a step
// ends, or Wake is called. It holds no lease itself: Step takes the lease
// around its one request and releases it before returning, so nothing is
// held while the scheduler sleeps (R22). Several schedulers, in one process
// or in several, may share a store: the lease keeps one owner per
// operation, and a step that finds the lease taken or the record moved on
// sends nothing.
//
// Two brakes keep a provider from seeing bursts:
//   - a per-contract ceiling (limits.max_requests_per_second), a token
//     bucket consulted before a step starts and, with Transport, again at
//     the moment each request leaves;
//   - catch-up pacing: after the scheduler starts, or resumes after a
//     stall, the operations already overdue are started at a bounded rate
//     instead of all at once (R9 for a whole fleet). docs/decisions.md,
//     "Scheduler", states the rule.
package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
)

// Contracts is the current contract set, looked up by name on every use so
// that a reload (SIGHUP) takes effect at the next step. *contract.Set
// implements it.
type Contracts interface {
	Get(name string) (*contract.Loaded, bool)
}

// Defaults for Options left at zero.
const (
	DefaultConcurrency = 32
	DefaultPoll        = time.Second
	DefaultBatch       = 256
	// DefaultCatchUpPerSlot: the default catch-up rate is this many step
	// starts per second per concurrency slot (128/s at the default
	// concurrency). A status request answered in 250 ms or more cannot go
	// faster than that anyway, so the pace only bites when the provider
	// answers fast and a backlog is waiting: when a burst would hurt.
	DefaultCatchUpPerSlot = 4
	// DefaultStartLinger: a walk waits at most this long for the slots
	// of Options.StartTogether, a small part of a step's usual time.
	DefaultStartLinger = 10 * time.Millisecond
)

// stallAfter is how much later than planned the loop may wake before it
// counts as a stall (a suspended process, a laptop lid): the operations
// due by then are a backlog and are paced like a restart's.
const stallAfter = 5 * time.Second

// Options configures a Scheduler. Controller, Contracts and Clock are
// required.
type Options struct {
	// Controller runs each step; steps of different operations run at
	// once.
	Controller *controller.Controller
	// Store is where due operations are found; default Controller.Store().
	Store     pollwarden.Store
	Contracts Contracts
	Clock     pollwarden.Clock
	// Concurrency is how many steps may be in flight at once; default 32.
	Concurrency int
	// Poll is how often to look for due work when nothing woke the
	// scheduler (changes made by other processes are seen this late at
	// worst); default 1s.
	Poll time.Duration
	// Batch is how many due operations one look fetches; default 256.
	Batch int
	// CatchUpRate is the most step starts per second for the backlog
	// found when Run starts or after a stall (see docs/decisions.md,
	// "Scheduler"); its burst is a tenth of a second's worth. Default
	// DefaultCatchUpPerSlot × Concurrency; negative turns pacing off.
	CatchUpRate float64
	// StartTogether, above one, makes the steps one walk starts claim in
	// one store call (controller.StepsFrom, pollwarden.ManyClaimer) and a
	// walk wait for that many free slots before it starts steps while
	// others are in flight (or for as many as there is due work, and at
	// most StartLinger), so that they are many. Zero (the default), one
	// or negative: each step claims alone, started as soon as a slot
	// frees. Measured, neither the batch nor the wait made the store's
	// groups larger or a step cheaper (docs/decisions.md, "Store
	// performance, sixth round: claims taken together").
	StartTogether int
	// StartLinger bounds how long a walk waits for StartTogether slots
	// before it starts what it may (a slow provider can hold the other
	// slots for a long time); default DefaultStartLinger.
	StartLinger time.Duration
	// Logger defaults to discarding. Each step is logged at debug level,
	// a failed step at error level.
	Logger *slog.Logger
	// Observer, when set, is told how late each step started, for
	// metrics. Its methods must not block.
	Observer Observer
}

// Observer sees the scheduler's timing; package metrics implements it.
type Observer interface {
	// Lateness is called as the scheduler starts a step of a due
	// operation: how long after its next_poll_at the step started.
	Lateness(d time.Duration)
}

// Scheduler steps due operations until its Run's context ends. Wake,
// Changed and Run may be called from any goroutine; Run once at a time.
type Scheduler struct {
	ctl          *controller.Controller
	store        pollwarden.Store
	contracts    Contracts
	clock        pollwarden.Clock
	log          *slog.Logger
	observer     Observer
	concurrency  int
	poll         time.Duration
	batch        int
	catchUpRate  float64
	catchUpBurst int
	// startTogether and startLinger: Options.StartTogether, StartLinger.
	startTogether int
	startLinger   time.Duration

	// poke is rung (never blocking) when a step ends or Wake is called;
	// the state that changed lives in the fields below.
	poke    chan struct{}
	woken   atomic.Bool
	running atomic.Bool

	// digests holds each loaded contract's section digests (by its
	// *pollwarden.ContractSpec, which a reload replaces), computed once, to
	// tell an operation created under another version of the file.
	digests sync.Map

	mu       sync.Mutex
	inflight map[string]struct{}
	// holds keep an operation from being started again before a time,
	// while its record is still at the version the hold was made for: a
	// step that found the lease taken, or failed, asks to be retried
	// later although the record still says "due".
	holds map[string]hold
	// ended lists the operations whose step ended since the last fetch:
	// a candidate read before that is stale and is not started again (if
	// the operation is due again, soonest makes the loop read it anew).
	ended map[string]struct{}
	// soonest is the earliest time a step ended since the last fetch asked
	// to look again at; zero when none.
	soonest time.Time
	// wakeAt is when the loop, asleep, means to look next; zero while it
	// is awake. Changed compares against it.
	wakeAt time.Time
	// arrivals are records Changed was given, which the loop adds to its
	// candidates instead of reading the store again: a daemon creating
	// operations through the API spent a fifth of its CPU re-listing the
	// due batch once per create. At most batch wait; past that, or for an
	// operation whose step ended since the last read, Changed wakes the
	// loop to read the store.
	arrivals []*pollwarden.Operation
	// Handed-over first steps (handoff.go): runCtx is Run's context,
	// accepting is true while Run runs, walkStopped while the last walk
	// left due work waiting for a slot; handed counts the steps running.
	runCtx      context.Context
	accepting   bool
	walkStopped bool
	handed      sync.WaitGroup
}

type hold struct {
	version int64
	until   time.Time
}

// New checks opts, fills in defaults and returns a Scheduler. It panics
// when a required option is missing: a programming error.
func New(opts Options) *Scheduler {
	if opts.Controller == nil || opts.Contracts == nil || opts.Clock == nil {
		panic("scheduler.New: Controller, Contracts and Clock are required")
	}
	if opts.Store == nil {
		opts.Store = opts.Controller.Store()
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.CatchUpRate == 0 {
		opts.CatchUpRate = DefaultCatchUpPerSlot * float64(opts.Concurrency)
	}
	if opts.StartLinger <= 0 {
		opts.StartLinger = DefaultStartLinger
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{
		ctl: opts.Controller, store: opts.Store, contracts: opts.Contracts, clock: opts.Clock,
		log: opts.Logger, observer: opts.Observer, concurrency: opts.Concurrency, poll: opts.Poll, batch: opts.Batch,
		catchUpRate: opts.CatchUpRate, startTogether: max(1, opts.StartTogether), startLinger: opts.StartLinger,
		poke:     make(chan struct{}, 1),
		inflight: map[string]struct{}{},
		holds:    map[string]hold{},
		ended:    map[string]struct{}{},
	}
	if s.catchUpRate > 0 {
		s.catchUpBurst = max(1, int(math.Ceil(s.catchUpRate/10)))
	}
	return s
}

// Run steps due operations until ctx ends. Then it starts nothing more,
// waits for the steps in flight (each finishes its one request, persists
// the answer and releases its lease; one not yet reserved stops without
// sending) and returns nil. Store errors are logged and retried after
// Poll, never returned; the only error is a second concurrent Run.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("scheduler: Run is already running")
	}
	defer s.running.Store(false)
	var steps sync.WaitGroup
	s.accept(ctx)
	l := newLoop(s, &steps)
	now := s.clock.Now()
	l.upSince = now.Round(0)
	l.startCatchUp(now, "start")
	for ctx.Err() == nil {
		next := l.iterate(ctx)
		s.sleepUntil(ctx, l, next)
	}
	s.mu.Lock()
	n := len(s.inflight)
	s.accepting = false
	s.mu.Unlock()
	s.log.Info("scheduler stopping", "steps_in_flight", n)
	steps.Wait()
	s.handed.Wait()
	s.log.Info("scheduler stopped")
	return nil
}

// Wake tells the scheduler that something changed (a new operation, a
// decision): it looks for due work now instead of at its next planned
// time. It never blocks. Each Wake costs a store read, so a hook called on
// every change should call Changed instead.
func (s *Scheduler) Wake() {
	s.woken.Store(true)
	s.ring()
}

// Changed is meant for controller.Options.OnChange: when the saved record
// is still observed (waiting or cancelling) and due before the scheduler's
// next planned look, it hands the record to the loop, which adds it to
// the due work it holds without reading the store; it ignores the changes
// the scheduler's own steps make.
func (s *Scheduler) Changed(op *pollwarden.Operation) {
	if op == nil || !op.Phase.Polling() {
		return
	}
	s.mu.Lock()
	_, busy := s.inflight[op.ID]
	if busy || (!s.wakeAt.IsZero() && op.NextPollAt.After(s.wakeAt)) {
		s.mu.Unlock()
		return
	}
	_, ended := s.ended[op.ID]
	queued := !ended && len(s.arrivals) < s.batch
	if queued {
		s.arrivals = append(s.arrivals, op.Clone())
	}
	s.mu.Unlock()
	if !queued {
		s.Wake()
		return
	}
	s.ring()
}

// takeArrivals empties arrivals.
func (s *Scheduler) takeArrivals() []*pollwarden.Operation {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.arrivals
	s.arrivals = nil
	return a
}

func (s *Scheduler) ring() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// sleepUntil sleeps on the clock until next, a poke, or the end of ctx.
// The helper goroutine is waited for, so a poke it took is one the next
// iteration already sees in the shared state.
func (s *Scheduler) sleepUntil(ctx context.Context, l *loop, next time.Time) {
	now := s.clock.Now()
	d := next.Sub(now)
	l.expect = next
	if d <= 0 {
		return
	}
	s.mu.Lock()
	s.wakeAt = next
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.wakeAt = time.Time{}
		s.mu.Unlock()
	}()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-s.poke:
			cancel()
		case <-sctx.Done():
		}
	}()
	_ = s.clock.Sleep(sctx, d)
	cancel()
	<-done
}

// started marks id in flight; false when it already is or no slot is free.
func (s *Scheduler) started(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.inflight[id]; busy || len(s.inflight) >= s.concurrency {
		return false
	}
	s.inflight[id] = struct{}{}
	return true
}

// slotsFree reports whether n more steps may start, or nothing is in
// flight (no step's end would ring the loop).
func (s *Scheduler) slotsFree(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) == 0 || len(s.inflight)+n <= s.concurrency
}

// slotFree reports whether another step may start.
func (s *Scheduler) slotFree() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) < s.concurrency
}

// held reports whether op must not be started now: it is in flight or its
// candidate is stale (zero time), or it is held until the time returned. A
// hold made for another version of the record no longer counts.
func (s *Scheduler) held(op *pollwarden.Operation, now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.inflight[op.ID]; busy {
		return time.Time{}, true
	}
	if _, stale := s.ended[op.ID]; stale {
		return time.Time{}, true
	}
	h, ok := s.holds[op.ID]
	if !ok {
		return time.Time{}, false
	}
	if h.version != op.Version || !now.Before(h.until) {
		delete(s.holds, op.ID)
		return time.Time{}, false
	}
	return h.until, true
}

// step runs one controller step and records what it asks for next. The
// step starts from the record as fetched (controller.StepFrom): the claim
// reloads it under the lease anyway, so reading it again first would only
// cost a read.
func (s *Scheduler) step(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation, up policy.Uptime) {
	start := s.clock.Now()
	if s.observer != nil && !op.NextPollAt.IsZero() {
		// Wall-clock difference, like the due times themselves.
		s.observer.Lateness(max(0, start.Round(0).Sub(op.NextPollAt.Round(0))))
	}
	op, ex, changed := s.contractChanged(ctx, ex, op)
	if changed != nil {
		s.stepChanged(ctx, op, changed)
		return
	}
	res, err := s.ctl.StepFromUp(ctx, ex, op, up)
	s.stepDone(ctx, op, start, res, err)
}

// stepMany runs the steps one walk started (each counted in steps): their
// claims are made together (controller.StepsFrom: one store write for
// the lot where the store can), then each goes on in its own goroutine,
// the last in this one. Each starts from the record as fetched: the claim
// reloads it under the lease anyway, so reading it again first would only
// cost a read. A step whose contract was edited since is handled alone
// (contractChanged).
func (s *Scheduler) stepMany(ctx context.Context, steps *sync.WaitGroup, starts []controller.StepStart) {
	start := s.clock.Now()
	batch := starts[:0]
	for _, st := range starts {
		if s.observer != nil && !st.Op.NextPollAt.IsZero() {
			// Wall-clock difference, like the due times themselves.
			s.observer.Lateness(max(0, start.Round(0).Sub(st.Op.NextPollAt.Round(0))))
		}
		op, ex, changed := s.contractChanged(ctx, st.Ex, st.Op)
		if changed != nil {
			go func() {
				defer steps.Done()
				s.stepChanged(ctx, op, changed)
			}()
			continue
		}
		st.Op, st.Ex = op, ex
		batch = append(batch, st)
	}
	rests := s.ctl.StepsFrom(ctx, batch)
	for i, rest := range rests {
		op := batch[i].Op
		run := func() {
			defer steps.Done()
			res, err := rest()
			s.stepDone(ctx, op, start, res, err)
		}
		if i == len(rests)-1 {
			run()
		} else {
			go run()
		}
	}
}

// stepChanged escalates, or lets through, an operation whose contract was
// edited since it was created (controller.StepChangedContract).
func (s *Scheduler) stepChanged(ctx context.Context, op *pollwarden.Operation, changed *policy.ContractChange) {
	res, err := s.ctl.StepChangedContract(ctx, op, *changed)
	if err == nil && res.Op != nil && res.Op.Phase.AwaitsDecision() {
		s.log.Warn("operation escalated: its contract was edited since it was created", "operation", op.ID,
			"contract", op.Contract, "changes", strings.Join(changed.Changes, ", "))
	}
	s.stepEnded(ctx, op, res, err, s.clock.Now())
}

// stepDone logs a step begun at start and records what it asks for next.
func (s *Scheduler) stepDone(ctx context.Context, op *pollwarden.Operation, start time.Time, res controller.StepResult, err error) {
	now := s.clock.Now()
	if err == nil && res.Op != nil {
		s.log.Debug("step", "operation", op.ID, "contract", op.Contract, "phase", res.Op.Phase,
			"sent", res.Sent, "status_requests_used", res.Op.StatusRequestsUsed, "next", res.Until,
			"took", now.Sub(start).Round(time.Millisecond))
	}
	s.stepEnded(ctx, op, res, err, now)
}

// stepWithoutContract escalates a due operation whose contract is not in
// the current set (controller.StepWithoutContract); nothing is sent.
func (s *Scheduler) stepWithoutContract(ctx context.Context, op *pollwarden.Operation) {
	res, err := s.ctl.StepWithoutContract(ctx, op)
	if err == nil && res.Op != nil && res.Op.Phase.AwaitsDecision() {
		s.log.Warn("operation escalated: its contract is not in the current set", "operation", op.ID,
			"contract", op.Contract, "reason", res.Op.Reason)
	}
	s.stepEnded(ctx, op, res, err, s.clock.Now())
}

// stepEnded records what a step asks for next and frees its slot.
func (s *Scheduler) stepEnded(ctx context.Context, op *pollwarden.Operation, res controller.StepResult, err error, now time.Time) {
	var h *hold
	switch {
	case err != nil:
		s.logStepError(ctx, op, err)
		// Look again after Poll, unless the record moves on meanwhile.
		h = &hold{version: op.Version, until: now.Add(s.poll)}
	case res.Op != nil && !res.Until.IsZero() && res.Op.NextPollAt.Before(res.Until):
		// The record still says "due" but the step asked for later (the
		// lease was taken, or the record changed under it).
		h = &hold{version: res.Op.Version, until: res.Until}
	}
	s.mu.Lock()
	delete(s.inflight, op.ID)
	s.ended[op.ID] = struct{}{}
	if h != nil {
		s.holds[op.ID] = *h
	}
	next := res.Until
	if h != nil {
		next = h.until
	}
	if !next.IsZero() && (s.soonest.IsZero() || next.Before(s.soonest)) {
		s.soonest = next
	}
	s.mu.Unlock()
	s.ring()
}

func (s *Scheduler) logStepError(ctx context.Context, op *pollwarden.Operation, err error) {
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		s.log.Debug("step interrupted by shutdown before sending", "operation", op.ID, "error", err)
	case errors.Is(err, pollwarden.ErrLeaseLost), errors.Is(err, pollwarden.ErrConflict):
		s.log.Debug("another owner moved the operation on", "operation", op.ID, "error", err)
	default:
		s.log.Error("step failed; retrying later", "operation", op.ID, "contract", op.Contract, "error", err)
	}
}

// contractChanged compares op with its contract as loaded now (a reload
// may have brought an edited file, or this process loads another file of
// the name): an edit that only lowers limits is taken up
// (controller.AdoptContract) and op returned as adopted, with the contract
// to step it under. Any other difference leaves an operation whose store
// keeps its contract going on under that one (ex); one created before
// contracts were kept has nothing else to run under, and the difference
// is returned, for it to be escalated rather than polled under a file it
// was not created under.
func (s *Scheduler) contractChanged(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (*pollwarden.Operation, *contract.Loaded, *policy.ContractChange) {
	loaded := ex
	if op.ContractFingerprint != "" {
		var ok bool
		if loaded, ok = s.contracts.Get(op.Contract); !ok || loaded.Spec().Name != op.Contract {
			return op, ex, nil
		}
	}
	ct := loaded.Spec()
	d, ok := s.digests.Load(ct)
	if !ok {
		d, _ = s.digests.LoadOrStore(ct, policy.ContractDigest(ct))
	}
	ch := policy.CompareDigests(op, ct, d.(map[string]string))
	switch {
	case !ch.Changed():
		return op, ex, nil
	case !ch.Adoptable && op.ContractFingerprint != "":
		// Never applied on its own: an approver may choose
		// use_current_contract once the operation is escalated.
		return op, ex, nil
	case !ch.Adoptable:
		return op, ex, &ch
	}
	next, err := s.ctl.AdoptContract(ctx, op.ID, ct, "the daemon, after its contracts were reloaded")
	if err != nil {
		// Polled under the stored, higher limits meanwhile: the edit only
		// lowers them, so nothing is widened; the next step tries again.
		s.log.Info("edited contract not taken up yet", "operation", op.ID, "contract", op.Contract, "err", err)
		return op, ex, nil
	}
	return next, loaded, nil
}
