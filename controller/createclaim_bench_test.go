package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// BenchmarkCreateFirstStep measures a create and its first step (request
// and answer) on SQLite, 32 at once, both ways: the create then a step
// that claims (three writes), and the create with its claim then the
// request (CreateClaim, two writes). Reported as process CPU per create,
// which holds under load better than the rate (the in-process provider's
// CPU is in both).
func BenchmarkCreateFirstStep(b *testing.B) {
	for _, way := range []string{"create-then-step", "create-claim"} {
		b.Run(way, func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "pw.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			srv := fp.New()
			defer srv.Close()
			c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: bench
status: {url: "%s/jobs/{job_id}"}
state: {path: state, pending: [running], success: [succeeded]}
backoff: {base: 1s, max: 1s}
limits: {deadline: 1h, max_status_requests: 10}
`, srv.URL()))
			if err != nil {
				b.Fatal(err)
			}
			ex, _ := contract.Compile(c)
			ctl := New(Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
				Prober: prober.New(prober.Options{Now: time.Now})})
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			n := int64(b.N)
			cpu0 := benchCPU(b)
			b.ResetTimer()
			for range 32 {
				wg.Go(func() {
					for {
						k := next.Add(1) - 1
						if k >= n {
							return
						}
						id := fmt.Sprintf("op-%d", k)
						op, evs, err := policy.NewOperation(ex.Spec(), policy.NewParams{ID: id, ProviderJobID: id, Rand: ctl.Factors()}, time.Now())
						if err != nil {
							b.Error(err)
							return
						}
						var res StepResult
						if way == "create-claim" {
							var first *FirstStep
							if first, err = ctl.CreateClaim(ctx, ex, op, evs); err == nil {
								res, err = first.Run(ctx)
							}
						} else if err = ctl.Create(ctx, ex, op, evs); err == nil {
							res, err = ctl.StepFrom(ctx, ex, op)
						}
						if err != nil || !res.Sent {
							b.Errorf("%s: sent %v, %v", id, res.Sent, err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			cpu := benchCPU(b) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/create")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchCPU is the process's CPU time so far.
func benchCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
