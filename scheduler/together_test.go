package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/sqlite"
)

// claimCounter records how the steps claimed: one at a time, or many in
// one store call (and how many each time).
type claimCounter struct {
	*sqlite.Store
	mu      sync.Mutex
	singles int
	batches []int
}

func (c *claimCounter) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	c.mu.Lock()
	c.singles++
	c.mu.Unlock()
	return c.Store.OperationClaim(ctx, p)
}

func (c *claimCounter) OperationClaimMany(ctx context.Context, ps []pollwarden.ClaimParams) []pollwarden.ClaimResult {
	c.mu.Lock()
	c.batches = append(c.batches, len(ps))
	c.mu.Unlock()
	return c.Store.OperationClaimMany(ctx, ps)
}

// TestStepsClaimTogether: the steps a walk starts claim in one store call
// (the first walk starts all 32 slots' worth), the next walk waits for
// StartTogether free slots while steps are in flight, and every operation
// still ends as its script says, one request at a time, within budget,
// each request reserved before it left and its answer persisted.
func TestStepsClaimTogether(t *testing.T) { inBubble(t, stepsClaimTogether) }

func stepsClaimTogether(t *testing.T, r *rig) {
	ex := r.contract("together", "")
	cc := &claimCounter{Store: r.store}
	ctl := r.controller(cc, "owner-a", nil)
	for i := range manyOperations {
		id, job := fmt.Sprintf("op-%03d", i), fmt.Sprintf("job-%03d", i)
		r.srv.Script(job, fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, ex, id, job)
	}
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, StartTogether: 8,
		CatchUpRate: -1}) // no pacing: the first walk starts every slot
	run := start(sched)
	waitFor(t, "every operation ends", 60*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)
	noSchedulerGoroutines(t)
	for i := range manyOperations {
		id, job := fmt.Sprintf("op-%03d", i), fmt.Sprintf("job-%03d", i)
		if op := r.checkBooks(id, job); op.Phase != pollwarden.PhaseSucceeded || r.srv.Count(job) != 2 {
			t.Errorf("%s: %s after %d requests, want succeeded after 2", id, op.Phase, r.srv.Count(job))
		}
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	claims := 0
	for _, n := range cc.batches {
		claims += n
	}
	if cc.singles != 0 || claims != 2*manyOperations {
		t.Fatalf("%d single claims and %d claimed together; want none and %d", cc.singles, claims, 2*manyOperations)
	}
	// The first walk starts every slot; while 32 were in flight, the
	// next walks waited for 8 free slots (the other due work waited
	// behind them). Work coming due one by one later starts one by one.
	if len(cc.batches) < 2 || cc.batches[0] != 32 || cc.batches[1] < 8 {
		t.Errorf("claims of the walks: %v; want 32 first, then at least 8", cc.batches)
	}
}

// slowJobs holds the requests of the jobs in slow until their context
// ends (the contract's 5 s timeout), like a provider that stopped
// answering them.
type slowJobs struct {
	base http.RoundTripper
	slow map[string]bool
}

func (s slowJobs) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.slow[path.Base(req.URL.Path)] {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return s.base.RoundTrip(req)
}

// TestStartTogetherWaitsOnlyStartLinger: while two steps hang on a
// provider that does not answer, the walk that wants StartTogether free
// slots waits no longer than StartLinger: the other due operations are
// answered within a second, long before the hung requests time out.
func TestStartTogetherWaitsOnlyStartLinger(t *testing.T) {
	inBubble(t, startTogetherWaitsOnlyStartLinger)
}

func startTogetherWaitsOnlyStartLinger(t *testing.T, r *rig) {
	r.base = slowJobs{base: r.base, slow: map[string]bool{"slow-0": true, "slow-1": true}}
	ex := r.contract("linger", "")
	ctl := r.controller(r.store, "owner-a", nil)
	var fast []string
	for i := range 2 {
		r.submit(ctl, ex, fmt.Sprintf("op-slow-%d", i), fmt.Sprintf("slow-%d", i))
	}
	for i := range 5 {
		job := fmt.Sprintf("fast-%d", i)
		r.srv.Script(job, fp.Succeeded("https://files.example.com/"+job))
		r.submit(ctl, ex, "op-"+job, job)
		fast = append(fast, "op-"+job)
	}
	begin := time.Now()
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Concurrency: 4,
		StartTogether: 4, StartLinger: 50 * time.Millisecond, CatchUpRate: -1})
	run := start(sched)
	waitFor(t, "the fast operations end", 60*time.Second, func() bool {
		for _, id := range fast {
			if r.get(id).Phase != pollwarden.PhaseSucceeded {
				return false
			}
		}
		return true
	})
	if took := time.Since(begin); took >= time.Second {
		t.Errorf("the fast operations took %s behind two hung requests, want well under a second", took)
	}
	run.stop(t)
	noSchedulerGoroutines(t)
}
