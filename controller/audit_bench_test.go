package controller

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// noEvents drops every event before it reaches the store: the baseline
// that shows what appending the audit trail costs a step.
type noEvents struct{ pollwarden.Store }

func (s noEvents) OperationCreate(ctx context.Context, op *pollwarden.Operation, _ []pollwarden.Event) error {
	return s.Store.OperationCreate(ctx, op, nil)
}

func (s noEvents) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	p.Events = nil
	return s.Store.OperationSave(ctx, p)
}

// BenchmarkStepAudit is BenchmarkStepSQLite with the audit trail switched
// off (events=none, a baseline no real store allows), kept plain, or
// sealed with XChaCha20-Poly1305. The cost of the audit trail is the drop
// in steps/s from none to plain or sealed (docs/BENCHMARKS.md).
func BenchmarkStepAudit(b *testing.B) {
	key, err := audit.NewSealKey(bytes.Repeat([]byte{1}, audit.SealKeySize))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"FULL", "NORMAL"} {
		for _, events := range []string{"none", "plain", "sealed"} {
			b.Run(fmt.Sprintf("synchronous=%s/events=%s", mode, events), func(b *testing.B) {
				srv := fp.New()
				defer srv.Close()
				srv.Script("j", fp.State("running", nil))
				opts := sqlite.Options{Synchronous: mode}
				if events == "sealed" {
					opts.Sealer = key
				}
				raw, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "pw.db"), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer raw.Close()
				var st pollwarden.Store = raw
				if events == "none" {
					st = noEvents{raw}
				}
				c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: bench
status: {url: "%s/jobs/{job_id}"}
state: {path: state, pending: [running], success: [succeeded]}
backoff: {base: 1s, max: 1s}
limits: {deadline: 100000h, max_status_requests: 1000000000}
`, srv.URL()))
				if err != nil {
					b.Fatal(err)
				}
				ex, _ := contract.Compile(c)
				clock := &fakeClock{now: time.Now()}
				ctl := New(Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
					Prober: prober.New(prober.Options{Now: clock.Now})})
				ctx := context.Background()
				if _, _, err := ctl.Submit(ctx, ex, policy.NewParams{ID: "op", ProviderJobID: "j"}); err != nil {
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
			})
		}
	}
}
