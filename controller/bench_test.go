package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// BenchmarkStepSQLite measures one full step: lease, reload, reserve and
// persist, one HTTP request to an in-process provider, persist the
// decision, release. Reported as steps/s for both synchronous modes.
func BenchmarkStepSQLite(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		b.Run("synchronous="+mode, func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "pw.db"), sqlite.Options{Synchronous: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			benchSteps(b, st)
		})
	}
}

// benchSteps runs b.N steps of one ever-running operation on st against an
// in-process provider, reporting steps/s.
func benchSteps(b *testing.B, st pollwarden.Store) {
	srv := fp.New()
	defer srv.Close()
	srv.Script("j", fp.State("running", nil))
	c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: bench
status: {url: "%s/jobs/{job_id}"}
state: {path: state, pending: [running], success: [succeeded]}
backoff: {base: 1s, max: 1s}
limits: {deadline: 8784h, max_status_requests: 1000000}
`, srv.URL()))
	if err != nil {
		b.Fatal(err)
	}
	ex, _ := contract.Compile(c)
	clock := &fakeClock{now: time.Now()}
	ctl := New(Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now})})
	ctx := context.Background()
	if _, err := ctl.Start(ctx, ex, policy.NewParams{ID: "op", ProviderJobID: "j"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := ctl.Step(ctx, ex, "op")
		if err != nil || !res.Sent {
			b.Fatalf("step: sent %v err %v", res.Sent, err)
		}
		clock.Advance(res.Until.Sub(clock.Now()))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
