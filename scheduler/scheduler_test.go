package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/sqlite"
)

// manyOperations is three times the 32 steps in flight, so most wait for
// a slot; the fleet sizes are the benchmarks'.
const manyOperations = 96

// TestManyOperationsReachOutcomes: operations of three kinds, stepped 32
// at a time, all end as their scripts say, within budget, one request at
// a time per job, every request reserved and its answer persisted.
func TestManyOperationsReachOutcomes(t *testing.T) { inBubble(t, manyOperationsReachOutcomes) }

func manyOperationsReachOutcomes(t *testing.T, r *rig) {
	ex := r.contract("many", "")
	ctl := r.controller(r.store, "owner-a", nil)
	want := map[string]pollwarden.Reason{}
	phase := map[string]pollwarden.Phase{}
	for i := range manyOperations {
		id, job := fmt.Sprintf("op-%03d", i), fmt.Sprintf("job-%03d", i)
		pending := fp.State("running", nil)
		switch i % 3 {
		case 0: // succeeds on request 1 to 4
			steps := make([]fp.Step, 0, 4)
			for range i % 4 {
				steps = append(steps, pending)
			}
			r.srv.Script(job, append(steps, fp.Succeeded("https://files.example.com/"+job))...)
			phase[id] = pollwarden.PhaseSucceeded
		case 1: // never ends: the fifth request is the last
			r.srv.Script(job, pending)
			phase[id], want[id] = pollwarden.PhaseEscalated, pollwarden.ReasonRequestBudgetExhausted
		case 2: // a state the contract does not know
			r.srv.Script(job, pending, fp.State("paused", nil))
			phase[id], want[id] = pollwarden.PhaseEscalated, pollwarden.ReasonUnknownState
		}
		r.submit(ctl, ex, id, job)
	}
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock})
	run := start(sched)
	waitFor(t, "every operation ends", 60*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)
	noSchedulerGoroutines(t)
	for i := range manyOperations {
		id, job := fmt.Sprintf("op-%03d", i), fmt.Sprintf("job-%03d", i)
		op := r.checkBooks(id, job)
		if op.Phase != phase[id] || op.Reason != want[id] {
			t.Errorf("%s: %s/%s, want %s/%s", id, op.Phase, op.Reason, phase[id], want[id])
		}
		if i%3 == 1 && r.srv.Count(job) != 5 {
			t.Errorf("%s: %d requests before request_budget_exhausted, want exactly 5", id, r.srv.Count(job))
		}
	}
}

// TestRateCeiling: with max_requests_per_second: 50 the provider never
// sees more than 50 + 1 (the bucket's burst) requests of that contract in
// any one-second window, while a contract without a ceiling is not held
// back behind it. In the bubble a request takes no time in transit, so
// the provider's log is exactly what the bucket released.
func TestRateCeiling(t *testing.T) { inBubble(t, rateCeiling) }

func rateCeiling(t *testing.T, r *rig) {
	slow := r.contract("slow", ", max_requests_per_second: 50")
	free := r.contract("free", "")
	ctl := r.controller(r.store, "owner-a", nil)
	var slowJobs, freeJobs []string
	for i := range 80 {
		job := fmt.Sprintf("slow-%02d", i)
		r.srv.Script(job, fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, slow, "op-"+job, job)
		slowJobs = append(slowJobs, job)
	}
	for i := range 40 {
		job := fmt.Sprintf("free-%02d", i)
		r.srv.Script(job, fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, free, "op-"+job, job)
		freeJobs = append(freeJobs, job)
	}
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock})
	run := start(sched)
	freeDone := func() bool {
		for _, j := range freeJobs {
			if r.get("op-"+j).Phase == pollwarden.PhaseWaiting {
				return false
			}
		}
		return true
	}
	waitFor(t, "the contract without a ceiling ends", 30*time.Second, freeDone)
	slowSent := len(r.requestTimes(slowJobs))
	waitFor(t, "every operation ends", 60*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)
	noSchedulerGoroutines(t)

	ts := r.requestTimes(slowJobs)
	if len(ts) != 160 {
		t.Fatalf("slow contract: %d requests, want 160", len(ts))
	}
	// The bucket releases at most 1 + 50/s (an unthrottled contract sends
	// all 80 first requests at once).
	if n := maxInWindow(ts, time.Second); n > 50+1 {
		t.Errorf("slow contract: %d requests in one second, ceiling 50 (+1 burst)", n)
	} else {
		t.Logf("slow contract: at most %d requests in any second (ceiling 50, burst 1)", n)
	}
	if slowSent >= len(ts) {
		t.Errorf("the free contract ended only after the slow one had sent all %d requests", slowSent)
	}
	t.Logf("the free contract's 80 requests were done when the slow one had sent %d of 160", slowSent)
	for _, j := range append(slowJobs, freeJobs...) {
		if op := r.checkBooks("op-"+j, j); op.Phase != pollwarden.PhaseSucceeded {
			t.Errorf("%s: %s/%s", j, op.Phase, op.Reason)
		}
	}
}

// TestRestartSpreadsOverdue: 300 operations overdue by an hour, as after a
// restart, are started at CatchUpRate (128/s at the default concurrency,
// burst 13), not all at once.
func TestRestartSpreadsOverdue(t *testing.T) { inBubble(t, restartSpreadsOverdue) }

func restartSpreadsOverdue(t *testing.T, r *rig) {
	ex := r.contract("restart", "")
	ctl := r.controller(r.store, "owner-a", nil)
	var jobs []string
	for i := range 300 {
		job := fmt.Sprintf("job-%03d", i)
		r.srv.Script(job, fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, ex, "op-"+job, job)
		r.overdue("op-"+job, time.Hour+time.Duration(i)*time.Second)
		jobs = append(jobs, job)
	}
	logs := &logBuffer{}
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Logger: logs.logger()})
	run := start(sched)
	waitFor(t, "every operation ends", 60*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)
	noSchedulerGoroutines(t)

	const rate, burst = 4 * scheduler.DefaultConcurrency, 13
	// Pacing holds step starts. In the bubble the claim a step commits
	// before its request, the dial and the group commit take no time, so
	// the provider sees exactly the pacing: the burst, then the rate.
	// Unpaced, all 300 would go at once.
	ts := r.requestTimes(jobs)
	first := ts[0]
	for _, w := range []time.Duration{100 * time.Millisecond, time.Second} {
		n := countBefore(ts, first.Add(w))
		limit := burst + int(rate*w.Seconds())
		if n > limit {
			t.Errorf("%d requests in the first %v after the restart, want at most %d", n, w, limit)
		} else {
			t.Logf("%d requests in the first %v (at most %d allowed; 300 were overdue)", n, w, limit)
		}
	}
	for _, j := range jobs {
		if op := r.checkBooks("op-"+j, j); op.Phase != pollwarden.PhaseSucceeded || r.srv.Count(j) != 1 {
			t.Errorf("%s: %s/%s after %d requests, want succeeded after 1", j, op.Phase, op.Reason, r.srv.Count(j))
		}
	}
	for _, want := range []string{`msg="pacing overdue operations" after=start`, `msg="caught up with overdue operations" after=start started=300`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestShutdownLetsStepsFinish: cancelling Run while requests are in flight
// returns once they are answered and persisted, with no lease left held
// and no goroutine left behind.
func TestShutdownLetsStepsFinish(t *testing.T) { inBubble(t, shutdownLetsStepsFinish) }

func shutdownLetsStepsFinish(t *testing.T, r *rig) {
	ex := r.contract("shutdown", "")
	ctl := r.controller(r.store, "owner-a", nil)
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	r.srv.OnRequest(func(string) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release // hold every request until the test lets them go
	})
	const ops, concurrency = 40, 8
	for i := range ops {
		job := fmt.Sprintf("job-%02d", i)
		r.srv.Script(job, fp.State("running", nil))
		r.submit(ctl, ex, "op-"+job, job)
	}
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Concurrency: concurrency})
	run := start(sched)
	waitFor(t, "a full set of requests in flight", 10*time.Second, func() bool { return inFlight.Load() == concurrency })
	run.cancel()
	select {
	case <-run.done:
		t.Fatal("Run returned while its steps' requests were still in flight")
	case <-time.After(100 * time.Millisecond):
	}
	once.Do(func() { close(release) })
	run.stop(t)
	noSchedulerGoroutines(t)
	if p := peak.Load(); p > concurrency {
		t.Errorf("%d requests in flight at once, concurrency %d", p, concurrency)
	}
	sent := 0
	for i := range ops {
		job := fmt.Sprintf("job-%02d", i)
		r.checkBooks("op-"+job, job)
		sent += r.srv.Count(job)
		l, err := r.store.LeaseAcquire(context.Background(), pollwarden.LeaseParams{
			OperationID: "op-" + job, Owner: "another-process", Now: time.Now(), TTL: time.Minute})
		if err != nil {
			t.Errorf("op-%s: lease still held after Run returned: %v", job, err)
			continue
		}
		_ = r.store.LeaseRelease(context.Background(), l)
	}
	if sent < concurrency {
		t.Errorf("%d requests sent in all, want at least the %d that were in flight", sent, concurrency)
	}
}

// TestTwoSchedulersShareOperations: two schedulers, each with its own
// store handle, controller and owner, step the same operations: never two
// requests at once for a job, and each due poll is sent once, so every job
// takes exactly the four requests its script needs.
func TestTwoSchedulersShareOperations(t *testing.T) {
	r := newRig(t)
	ex := r.contract("shared", "")
	ctlA := r.controller(r.store, "owner-a", nil)
	ctlB := r.controller(r.open(sqlite.Options{}), "owner-b", nil)
	const ops = 100
	for i := range ops {
		job := fmt.Sprintf("job-%03d", i)
		run := fp.State("running", nil)
		run.Delay = 5 * time.Millisecond // widen the window for a second request
		r.srv.Script(job, run, run, run, fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctlA, ex, "op-"+job, job)
	}
	a := start(scheduler.New(scheduler.Options{Controller: ctlA, Contracts: r.set, Clock: r.clock, Concurrency: 16}))
	b := start(scheduler.New(scheduler.Options{Controller: ctlB, Contracts: r.set, Clock: r.clock, Concurrency: 16}))
	waitFor(t, "every operation ends", 60*time.Second, func() bool { return r.waiting() == 0 })
	a.stop(t)
	b.stop(t)
	noSchedulerGoroutines(t)
	for i := range ops {
		job := fmt.Sprintf("job-%03d", i)
		op := r.checkBooks("op-"+job, job)
		if op.Phase != pollwarden.PhaseSucceeded || r.srv.Count(job) != 4 {
			t.Errorf("%s: %s/%s after %d requests, want succeeded after exactly 4", job, op.Phase, op.Reason, r.srv.Count(job))
		}
	}
}

// TestMissingContractEscalates: a due operation created before contracts
// were kept, whose contract left the set, is escalated integration_failure naming the contract (or
// deadline_exceeded once past its deadline), logged once, with nothing
// sent, and does not hold back the others; when the contract is back an
// approver's extension runs it to its end.
func TestMissingContractEscalates(t *testing.T) { inBubble(t, missingContractEscalates) }

func missingContractEscalates(t *testing.T, r *rig) {
	kept := r.contract("kept", "")
	gone := r.compile("gone", "")
	ctl := r.controller(r.store, "owner-a", nil)
	for i := range 20 {
		job := fmt.Sprintf("gone-%02d", i)
		r.srv.Script(job, fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, gone, "op-"+job, job)
		// As a record written before contracts were kept: only the
		// loaded contract of its name could run it.
		op := r.get("op-" + job)
		op.ContractFingerprint = ""
		if i%5 == 0 { // past its deadline by the time it is looked at
			op.DeadlineAt = r.clock.Now().Add(-time.Second)
		}
		if err := r.store.OperationSave(context.Background(), pollwarden.SaveParams{Op: op}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		job := fmt.Sprintf("kept-%02d", i)
		r.srv.Script(job, fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, kept, "op-"+job, job)
	}
	// The store keeps their contract: they run under it, file or not.
	for i := range 3 {
		job := fmt.Sprintf("stored-%02d", i)
		r.srv.Script(job, fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, gone, "op-"+job, job)
	}
	logs := &logBuffer{}
	// A batch smaller than the missing ones: they must not hide the others.
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock,
		Batch: 8, Poll: 50 * time.Millisecond, Logger: logs.logger()})
	run := start(sched)
	waitFor(t, "every operation to end", 30*time.Second, func() bool { return r.waiting() == 0 })
	time.Sleep(200 * time.Millisecond) // several more looks (the bubble's time: instant)
	for i := range 20 {
		job := fmt.Sprintf("gone-%02d", i)
		want := pollwarden.ReasonIntegrationFailure
		if i%5 == 0 {
			want = pollwarden.ReasonDeadlineExceeded
		}
		op := r.get("op-" + job)
		if op.Phase != pollwarden.PhaseEscalated || op.Reason != want || op.StatusRequestsUsed != 0 || r.srv.Count(job) != 0 {
			t.Errorf("%s without its contract: %s/%s, %d used, %d sent; want escalated/%s, nothing sent",
				job, op.Phase, op.Reason, op.StatusRequestsUsed, r.srv.Count(job), want)
		}
		if op.Escalation == nil || !strings.Contains(op.Escalation.Message, `contract "gone" is not in the daemon's contract set`) {
			t.Errorf("%s: the escalation does not name the missing contract: %+v", job, op.Escalation)
		}
		if n := strings.Count(logs.String(), `msg="contract not in the current set; escalating the operation, which is due" operation=op-`+job+` contract=gone`); n != 1 {
			t.Errorf("%s: logged %d times, want once", job, n)
		}
	}
	for i := range 20 {
		job := fmt.Sprintf("kept-%02d", i)
		if op := r.checkBooks("op-"+job, job); op.Phase != pollwarden.PhaseSucceeded {
			t.Errorf("%s: %s/%s", job, op.Phase, op.Reason)
		}
	}
	for i := range 3 {
		job := fmt.Sprintf("stored-%02d", i)
		if op := r.get("op-" + job); op.Phase != pollwarden.PhaseSucceeded || r.srv.Count(job) != 2 {
			t.Errorf("%s, its contract kept by the store but not loaded: %s/%s after %d requests, want succeeded", job, op.Phase, op.Reason, r.srv.Count(job))
		}
	}

	r.set.Put(gone) // a reload brings it back; an approver extends
	approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	if _, err := ctl.Decide(context.Background(), gone, "op-gone-01", policy.DecisionParams{Option: pollwarden.OptionExtend, Actor: approver}); err != nil {
		t.Fatal(err)
	}
	sched.Wake()
	waitFor(t, "the extended operation to end", 30*time.Second, func() bool { return !r.get("op-gone-01").Phase.Polling() })
	run.stop(t)
	noSchedulerGoroutines(t)
	if op := r.checkBooks("op-gone-01", "gone-01"); op.Phase != pollwarden.PhaseSucceeded {
		t.Errorf("op-gone-01 after the extension: %s/%s", op.Phase, op.Reason)
	}
}

// TestChangedWakes: with a one-hour Poll, an operation submitted through a
// controller whose OnChange is the scheduler's Changed is stepped at once,
// long before the hour is up.
func TestChangedWakes(t *testing.T) { inBubble(t, changedWakes) }

func changedWakes(t *testing.T, r *rig) {
	ex := r.contract("wake", "")
	var sched *scheduler.Scheduler
	var changes atomic.Int32
	ctl := r.controller(r.store, "owner-a", func(op *pollwarden.Operation) {
		changes.Add(1)
		sched.Changed(op)
	})
	sched = scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Poll: time.Hour})
	run := start(sched)
	defer run.stop(t)
	synctest.Wait() // asleep for the hour
	asleep := time.Now()
	r.srv.Script("job", fp.State("running", nil), fp.Succeeded("https://files.example.com/job"))
	r.submit(ctl, ex, "op", "job")
	waitFor(t, "the new operation ends", 10*time.Second, func() bool { return r.get("op").Phase == pollwarden.PhaseSucceeded })
	if took := time.Since(asleep); took > time.Minute {
		t.Errorf("the operation ended %v after the scheduler fell asleep: it waited for the poll, not the change", took)
	}
	if changes.Load() < 5 { // created, then reserve and answer twice
		t.Errorf("OnChange called %d times", changes.Load())
	}
}

// listCounter counts the store's listings.
type listCounter struct {
	pollwarden.Store
	lists atomic.Int32
}

func (c *listCounter) OperationList(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	c.lists.Add(1)
	return c.Store.OperationList(ctx, p)
}

// TestChangedAddsWithoutListing: operations created while the scheduler
// runs (Poll one hour) are each stepped at once from the record Changed
// hands over, without a listing of the store per create; a decision's
// change reaches the loop the same way.
func TestChangedAddsWithoutListing(t *testing.T) {
	r := newRig(t)
	ex := r.contract("arrive", "")
	var sched *scheduler.Scheduler
	ctl := r.controller(r.store, "owner-a", func(op *pollwarden.Operation) { sched.Changed(op) })
	counted := &listCounter{Store: r.store}
	sched = scheduler.New(scheduler.Options{Controller: ctl, Store: counted, Contracts: r.set, Clock: r.clock, Poll: time.Hour})
	run := start(sched)
	defer run.stop(t)
	time.Sleep(50 * time.Millisecond) // the first listing, then asleep for the hour
	before := counted.lists.Load()
	const n = 20
	for i := range n {
		job := fmt.Sprintf("job-%02d", i)
		r.srv.Script(job, fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, ex, "op-"+job, job)
	}
	waitFor(t, "every new operation ends", 10*time.Second, func() bool {
		for i := range n {
			if r.get(fmt.Sprintf("op-job-%02d", i)).Phase != pollwarden.PhaseSucceeded {
				return false
			}
		}
		return true
	})
	if lists := counted.lists.Load() - before; lists > n/4 {
		t.Errorf("%d creates made %d listings of the store, want at most %d", n, lists, n/4)
	}
}

// TestRunTwice: a Scheduler runs once at a time.
func TestRunTwice(t *testing.T) { inBubble(t, runTwice) }

func runTwice(t *testing.T, r *rig) {
	ctl := r.controller(r.store, "owner-a", nil)
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock})
	run := start(sched)
	synctest.Wait() // the first Run is asleep
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := sched.Run(ctx); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run: %v", err)
	}
	run.stop(t)
	noSchedulerGoroutines(t)
}

// jumpClock is the wall clock plus an offset the test moves, as a laptop
// whose lid was closed sees time jump on waking.
type jumpClock struct {
	pollwarden.WallTimers
	offset atomic.Int64
}

func (c *jumpClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *jumpClock) Sleep(ctx context.Context, d time.Duration) error {
	return pollwarden.RealClock{}.Sleep(ctx, d)
}

// TestStallPacesOverdue: when the scheduler wakes far later than it meant
// to (a suspended process), the operations that fell due meanwhile are a
// backlog and are paced like a restart's, not sent at once.
func TestStallPacesOverdue(t *testing.T) { inBubble(t, stallPacesOverdue) }

func stallPacesOverdue(t *testing.T, r *rig) {
	clock := &jumpClock{}
	r.clock = clock
	ex := r.contract("stall", "")
	ctl := r.controller(r.store, "owner-a", nil)
	var jobs []string
	for i := range 100 {
		job := fmt.Sprintf("job-%03d", i)
		r.srv.Script(job, fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, ex, "op-"+job, job)
		r.nextPoll("op-"+job, time.Minute+time.Duration(i)*time.Millisecond)
		jobs = append(jobs, job)
	}
	logs := &logBuffer{}
	const rate, burst = 50, 5
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: clock,
		Poll: 100 * time.Millisecond, CatchUpRate: rate, Logger: logs.logger()})
	run := start(sched)
	time.Sleep(150 * time.Millisecond) // asleep, nothing due for a minute
	if n := len(r.requestTimes(jobs)); n != 0 {
		t.Fatalf("%d requests before anything was due", n)
	}
	clock.offset.Store(int64(90 * time.Second)) // the lid opens 90 s later
	waitFor(t, "every operation ends", 30*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)
	noSchedulerGoroutines(t)
	ts := r.requestTimes(jobs)
	// As in TestRestartSpreadsOverdue: the burst, then the rate, exactly.
	for _, w := range []time.Duration{100 * time.Millisecond, time.Second} {
		n := countBefore(ts, ts[0].Add(w))
		if limit := burst + int(rate*w.Seconds()); n > limit {
			t.Errorf("%d requests in the first %v after waking, want at most %d", n, w, limit)
		}
	}
	for _, want := range []string{"scheduler woke late", `msg="pacing overdue operations" after=stall`,
		`msg="caught up with overdue operations" after=stall started=100`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	for _, j := range jobs {
		if op := r.checkBooks("op-"+j, j); op.Phase != pollwarden.PhaseSucceeded {
			t.Errorf("%s: %s/%s", j, op.Phase, op.Reason)
		}
	}
}

// TestBusyIsNotSpread: operations that fall due while the scheduler is
// running but busy (more due than its concurrency, each answer taking
// 30 ms) start late, some by many times the base delay; they are late
// because of load, not because no process was running, so each sends its
// request at once instead of being spread as a missed wake-up (R9).
// Operations due before the scheduler started are still spread.
func TestBusyIsNotSpread(t *testing.T) {
	r := newRig(t)
	ex := r.contract("busy", "")
	ctl := r.controller(r.store, "owner-a", nil)
	const n = 30
	var jobs []string
	due := map[string]time.Time{}
	for i := range n {
		job := fmt.Sprintf("job-%03d", i)
		r.srv.Script(job, fp.Step{JSON: map[string]any{"state": "succeeded", "result": map[string]any{"url": "https://files.example.com/" + job}},
			Delay: 30 * time.Millisecond})
		r.submit(ctl, ex, "op-"+job, job)
		jobs = append(jobs, job)
	}
	// For contrast, operations polled once and due an hour before the
	// scheduler started: missed while no process ran, so spread.
	var downJobs []string
	for i := range 3 {
		job := fmt.Sprintf("down-%d", i)
		r.srv.Script(job, fp.Succeeded("https://files.example.com/"+job))
		op := r.submit(ctl, ex, "op-"+job, job)
		op.CompletedPolls, op.NextPollAt = 1, r.clock.Now().Add(-time.Hour)
		if err := r.store.OperationSave(context.Background(), pollwarden.SaveParams{Op: op}); err != nil {
			t.Fatal(err)
		}
		downJobs = append(downJobs, job)
	}
	// Each operation has been polled once (so a late wake-up of it could
	// be spread) and is not due for an hour.
	setDue := func(at time.Time) {
		for _, j := range jobs {
			op := r.get("op-" + j)
			op.CompletedPolls, op.NextPollAt = 1, at
			if err := r.store.OperationSave(context.Background(), pollwarden.SaveParams{Op: op}); err != nil {
				t.Fatal(err)
			}
			due["op-"+j] = at
		}
	}
	setDue(r.clock.Now().Add(time.Hour))
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Concurrency: 1})
	run := start(sched)
	// Once the overdue ones are done the scheduler is surely running: now
	// the 30 fall due together, after it started.
	waitFor(t, "the operations due before the start end", 30*time.Second, func() bool { return r.waiting() == n })
	setDue(r.clock.Now())
	sched.Wake()
	waitFor(t, "every operation ends", 60*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)
	noSchedulerGoroutines(t)

	spread := func(id string) []string {
		evs, err := r.store.EventList(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs {
			if e.Kind == pollwarden.EventNextCheckScheduled && strings.Contains(e.Data.Detail, "late wake-up") {
				out = append(out, e.Data.Detail)
			}
		}
		return out
	}
	for _, j := range downJobs {
		if got := spread("op-" + j); len(got) != 1 || r.srv.Count(j) != 1 {
			t.Errorf("op-%s, due an hour before the start: spread %q, %d requests; want spread once, then one request", j, got, r.srv.Count(j))
		}
	}
	base := ex.Spec().Backoff.Base
	late := 0
	for _, j := range jobs {
		id := "op-" + j
		reqs := r.srv.Requests(j)
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests, want 1", id, len(reqs))
		}
		// One at a time, 30 ms each: the k-th starts at least k·30 ms
		// after the due time, whatever the machine's speed.
		if reqs[0].Time.Sub(due[id]) > base {
			late++
		}
		if got := spread(id); len(got) > 0 {
			t.Errorf("%s: a step late because the scheduler was busy was spread: %q", id, got)
		}
		if op := r.get(id); op.Phase != pollwarden.PhaseSucceeded {
			t.Errorf("%s: %s/%s", id, op.Phase, op.Reason)
		}
	}
	if late < n/2 {
		t.Fatalf("only %d of %d requests went more than the base delay (%s) after their due time: the scheduler was not busy", late, n, base)
	}
	t.Logf("%d of %d requests went more than %s late", late, n, base)
}
