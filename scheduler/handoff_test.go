package scheduler_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/scheduler"
)

// TestFirstStepsShareTheConcurrency: creates' first steps handed over
// (Reserve, Start) take the scheduler's slots like its own steps: no more
// than Concurrency requests at once, Reserve says no while none is free
// or Run is not running, and Run waits for a handed step before it
// returns.
func TestFirstStepsShareTheConcurrency(t *testing.T) { inBubble(t, firstStepsShareTheConcurrency) }

func firstStepsShareTheConcurrency(t *testing.T, r *rig) {
	ex := r.contract("handoff", "")
	var sched *scheduler.Scheduler
	ctl := r.controller(r.store, "owner-a", func(op *pollwarden.Operation) { sched.Changed(op) })
	late := &countLateness{}
	sched = scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Concurrency: 2, Poll: time.Hour, Observer: late})
	if sched.Reserve(ex, "op-0") {
		t.Fatal("Reserve before Run")
	}
	var inFlight atomic.Int32
	release := make(chan struct{})
	r.srv.OnRequest(func(string) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		<-release
	})
	run := start(sched)
	waitFor(t, "the scheduler running", 10*time.Second, func() bool {
		if !sched.Reserve(ex, "probe") {
			return false
		}
		sched.Cancel("probe")
		return true
	})
	create := func(i int) bool {
		id, job := fmt.Sprintf("op-%d", i), fmt.Sprintf("job-%d", i)
		r.srv.Script(job, fp.State("running", nil))
		op, evs, err := policy.NewOperation(ex.Spec(), policy.NewParams{ID: id, ProviderJobID: job}, r.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !sched.Reserve(ex, id) {
			return false
		}
		first, err := ctl.CreateClaim(context.Background(), ex, op, evs)
		if err != nil {
			sched.Cancel(id)
			t.Fatal(err)
		}
		sched.Start(first.Op(), first.Run)
		return true
	}
	if !create(1) || !create(2) {
		t.Fatal("Reserve refused with free slots")
	}
	waitFor(t, "two requests in flight", 10*time.Second, func() bool { return inFlight.Load() == 2 })
	if create(3) {
		t.Fatal("Reserve held a third slot of two")
	}
	run.cancel()
	select {
	case <-run.done:
		t.Fatal("Run returned while handed steps' requests were in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	run.stop(t)
	if sched.Reserve(ex, "op-4") {
		t.Fatal("Reserve after Run returned")
	}
	// Each handed step is a step started, seen by the lateness observer
	// like the walk's (pollwarden_scheduling_lateness_seconds).
	if n := late.n.Load(); n != 2 {
		t.Errorf("lateness observed %d times, want once per handed step (2)", n)
	}
	for i := 1; i <= 2; i++ {
		id, job := fmt.Sprintf("op-%d", i), fmt.Sprintf("job-%d", i)
		r.checkBooks(id, job)
		if op := r.get(id); r.srv.Count(job) != 1 || op.StatusRequestsUsed != 1 || op.CompletedPolls != 1 {
			t.Errorf("%s: provider saw %d, used %d, completed %d; want one request, answered", id, r.srv.Count(job), op.StatusRequestsUsed, op.CompletedPolls)
		}
	}
}

// countLateness counts the steps the scheduler says it started.
type countLateness struct{ n atomic.Int32 }

func (c *countLateness) Lateness(time.Duration) { c.n.Add(1) }
