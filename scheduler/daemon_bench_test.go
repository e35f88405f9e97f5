package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/sqlite"
)

// The daemon's figures (docs/BENCHMARKS.md, "Daemon"): what `pollwarden
// serve` sustains with 10,000 operations in flight on one SQLite file,
// against the in-process fake provider on loopback answering at once.
// Each measures with the real scheduler, controller, prober and store,
// wired as cli's engine wires them (scheduler.Transport with as many idle
// connections as steps in flight).

const (
	daemonOps         = 10000
	daemonConcurrency = 256
)

// BenchmarkDaemonThroughput: durable status requests per second, each
// reserved in the store before it left and its answer committed with the
// lease's release after (two write transactions per request), with
// 10,000 operations always due (1 ms backoff) so the scheduler never
// waits for work. b.N is the number of requests. Lateness is reported
// too, but with every operation always due it is queueing by design; see
// BenchmarkDaemonLateness for lateness at a sustainable load.
func BenchmarkDaemonThroughput(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run("synchronous="+sync, func(b *testing.B) {
			d := newDaemon(b, sync, time.Millisecond, 0)
			d.run(b, int64(b.N), 0)
		})
	}
}

// BenchmarkDaemonLateness: 10,000 operations polled with a fixed backoff
// chosen so that they offer `rate` requests per second on average (R5's
// jitter draws each delay in [50 %, 100 %] of it), their first polls
// spread over one delay as a running daemon's are. Reported: the achieved
// rate and how late each step started after its next_poll_at (p50, p99,
// max), measured over b.N requests after one full delay of warm-up.
func BenchmarkDaemonLateness(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, rate := range []int{1000, 2500, 4000, 5000} {
			b.Run(fmt.Sprintf("synchronous=%s/rate=%d", sync, rate), func(b *testing.B) {
				// Mean delay 0.75 × raw, so raw = ops / (0.75 × rate).
				raw := time.Duration(float64(daemonOps) / (0.75 * float64(rate)) * float64(time.Second))
				d := newDaemon(b, sync, raw, raw)
				d.run(b, int64(b.N), raw)
			})
		}
	}
}

// BenchmarkDaemonCeiling is the ceiling for BenchmarkDaemonThroughput: the
// same provider, jobs and concurrency, but only the bare HTTP round trip —
// a plain net/http client, no store, no scheduler. The ratio of the two
// is how much of the loopback round trip the daemon keeps.
func BenchmarkDaemonCeiling(b *testing.B) {
	srv := fp.New()
	defer srv.Close()
	for i := range daemonOps {
		srv.Script(fmt.Sprintf("job-%05d", i), fp.State("running", nil))
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = daemonConcurrency
	client := &http.Client{Transport: t}
	defer t.CloseIdleConnections()
	var next, failed atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range daemonConcurrency {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				resp, err := client.Get(fmt.Sprintf("%s/jobs/job-%05d", srv.URL(), i%daemonOps))
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	b.ReportMetric(0, "ns/op")
}

// daemon is one scheduler over one store file with daemonOps operations.
type daemon struct {
	srv   *fp.Server
	sched *scheduler.Scheduler
	late  *lateness
	sent  atomic.Int64
}

// newDaemon creates daemonOps never-ending operations whose backoff is
// always raw (base = max), the first polls spread uniformly over [now,
// now+spread), and a scheduler as serve wires it, over a store opened with
// synchronous mode sync.
func newDaemon(b *testing.B, sync string, raw, spread time.Duration) *daemon {
	r := newRig(b)
	ex := r.compile("bench", "")
	c := *ex.Spec()
	c.Backoff.Base, c.Backoff.Max = raw, raw
	c.Limits.Deadline, c.Limits.MaxStatusRequests = 100000*time.Hour, 1<<30
	ex = mustCompile(b, &c)
	r.set.Put(ex)
	// Set up on the rig's store (synchronous=FULL is slow to fill; the
	// mode only matters while measuring).
	setup := r.open(sqlite.Options{Synchronous: "NORMAL"})
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	// Computed once, as the daemon does per contract (not per operation).
	digest := policy.ContractDigest(ex.Spec())
	for i := range daemonOps {
		job := fmt.Sprintf("job-%05d", i)
		r.srv.Script(job, fp.State("running", nil))
		op, events, err := policy.NewOperation(ex.Spec(), policy.NewParams{ID: "op-" + job, ProviderJobID: job, ContractDigest: digest}, now)
		if err != nil {
			b.Fatal(err)
		}
		if spread > 0 {
			op.NextPollAt = now.Add(time.Duration(rng.Int64N(int64(spread))))
		}
		if err := setup.OperationCreate(context.Background(), op, events); err != nil {
			b.Fatal(err)
		}
	}
	st := r.open(sqlite.Options{Synchronous: sync})
	late := &lateness{}
	ctl := controller.New(controller.Options{
		Store: st, Clock: pollwarden.RealClock{}, Owner: "bench", Rand: rand.New(rand.NewPCG(3, 4)),
		Prober: prober.New(prober.Options{Now: time.Now, Transport: scheduler.Transport(scheduler.BaseTransport(daemonConcurrency))}),
	})
	d := &daemon{srv: r.srv, late: late}
	r.srv.OnRequest(func(string) { d.sent.Add(1) })
	d.sched = scheduler.New(scheduler.Options{Controller: ctl, Store: st, Contracts: r.set, Clock: pollwarden.RealClock{},
		Concurrency: daemonConcurrency, CatchUpRate: -1, Observer: late})
	return d
}

// run starts the scheduler, lets warmup pass, then times n requests and
// reports the rate and the lateness seen meanwhile.
func (d *daemon) run(b *testing.B, n int64, warmup time.Duration) {
	run := start(d.sched)
	defer run.stop(b)
	if warmup > 0 {
		time.Sleep(warmup)
	}
	d.late.reset()
	from := d.sent.Load()
	b.ResetTimer()
	for d.sent.Load()-from < n {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	got := d.sent.Load() - from
	elapsed := b.Elapsed()
	p50, p99, worst := d.late.percentiles()
	b.ReportMetric(float64(got)/elapsed.Seconds(), "requests/s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "late-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "late-p99-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "late-max-ms")
	b.ReportMetric(0, "ns/op")
}

// lateness keeps every lateness the scheduler reports.
type lateness struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *lateness) Lateness(d time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

func (l *lateness) reset() {
	l.mu.Lock()
	l.ds = l.ds[:0]
	l.mu.Unlock()
}

func (l *lateness) percentiles() (p50, p99, worst time.Duration) {
	l.mu.Lock()
	ds := slices.Clone(l.ds)
	l.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return at(0.50), at(0.99), ds[len(ds)-1]
}

var _ scheduler.Observer = (*lateness)(nil)
