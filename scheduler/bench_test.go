package scheduler_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/sqlite"
)

// BenchmarkSchedulerThroughput: many operations that never end, with a
// 1 ms backoff so that every one of them is always due, stepped by one
// scheduler against the in-process provider. b.N is the number of status
// requests; the figure is durable status requests per second (each one
// reserved before it was sent and answered into the store, two write
// transactions per step). Catch-up pacing is off: this measures how fast
// the scheduler can go, not how fast it chooses to after a restart.
func BenchmarkSchedulerThroughput(b *testing.B) {
	for _, c := range []struct {
		ops, concurrency int
		sync             string
	}{
		{1000, 32, "NORMAL"},
		{1000, 32, "FULL"},
		{10000, 256, "NORMAL"},
		{10000, 256, "FULL"},
	} {
		b.Run(fmt.Sprintf("ops=%d/concurrency=%d/synchronous=%s", c.ops, c.concurrency, c.sync), func(b *testing.B) {
			benchThroughput(b, c.ops, c.concurrency, c.sync)
		})
	}
}

func benchThroughput(b *testing.B, ops, concurrency int, sync string) {
	r := newRig(b)
	ex := r.compile("bench", "")
	// A contract of its own: always pending, 1 ms backoff, no budget to
	// speak of.
	c := *ex.Spec()
	c.Backoff.Base, c.Backoff.Max = time.Millisecond, time.Millisecond
	c.Limits.Deadline, c.Limits.MaxStatusRequests = 100000*time.Hour, 1<<30
	ex = mustCompile(b, &c)
	r.set.Put(ex)
	// Set up with synchronous=NORMAL (fast), measure in the mode asked.
	setup := r.controller(r.store, "setup", nil)
	for i := range ops {
		job := fmt.Sprintf("job-%05d", i)
		r.srv.Script(job, fp.State("running", nil))
		if _, err := setup.Start(context.Background(), ex, policy.NewParams{ID: "op-" + job, ProviderJobID: job}); err != nil {
			b.Fatal(err)
		}
	}
	st := r.open(sqlite.Options{Synchronous: sync})
	ctl := r.controller(st, "bench", nil)
	var sent atomic.Int64
	r.srv.OnRequest(func(string) { sent.Add(1) })
	sched := scheduler.New(scheduler.Options{Controller: ctl, Store: st, Contracts: r.set, Clock: r.clock,
		Concurrency: concurrency, CatchUpRate: -1})
	b.ResetTimer()
	run := start(sched)
	for sent.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	n := sent.Load()
	elapsed := b.Elapsed()
	run.stop(b)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "requests/s")
	b.ReportMetric(0, "ns/op")
}

func mustCompile(b testing.TB, c *pollwarden.ContractSpec) *contract.Loaded {
	b.Helper()
	ex, err := contract.Compile(c)
	if err != nil {
		b.Fatal(err)
	}
	return ex
}
