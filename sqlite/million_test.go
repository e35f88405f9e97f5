package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

// TestVerifyMillion builds a store of 1,000,000 events (10,000 operations
// of 100 events, each a realistic response_received payload) and verifies
// its chain, reporting the time and the Go heap's peak. It takes about a
// minute, so it runs only when POLLWARDEN_VERIFY_1M is set: to a file path
// to keep the store there (for `pollwarden audit verify --store PATH`
// under /usr/bin/time), or to 1 for a temporary one. Set
// POLLWARDEN_VERIFY_1M_SEALED=1 to seal the payloads. See
// docs/BENCHMARKS.md.
func TestVerifyMillion(t *testing.T) {
	target := os.Getenv("POLLWARDEN_VERIFY_1M")
	if target == "" {
		t.Skip("set POLLWARDEN_VERIFY_1M=1 (or =PATH to keep the store) to build and verify a 1,000,000-event store")
	}
	path := filepath.Join(t.TempDir(), "1m.db")
	if target != "1" {
		path = target
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s exists; give a new path", path)
		}
	}
	var opts sqlite.Options
	opts.Synchronous = "NORMAL"
	if os.Getenv("POLLWARDEN_VERIFY_1M_SEALED") != "" {
		opts.Sealer = storetest.SealKey(t, 7)
	}
	const ops, perOp = 10_000, 100
	start := time.Now()
	s := open(t, path, opts)
	at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	deadline := at.Add(40 * time.Minute)
	for i := range ops {
		id := fmt.Sprintf("report-export-%012x", i)
		op := &pollwarden.Operation{ID: id, Phase: pollwarden.PhaseWaiting}
		if err := s.OperationCreate(t.Context(), op, []pollwarden.Event{{At: at, Kind: pollwarden.EventSubmitted,
			Data: pollwarden.EventData{ProviderJobID: "exp_" + id, DeadlineAt: &deadline, MaxRequests: 12}}}); err != nil {
			t.Fatal(err)
		}
		evs := make([]pollwarden.Event, perOp-1)
		for j := range evs {
			next := at.Add(time.Duration(j+1) * time.Second)
			evs[j] = pollwarden.Event{At: at.Add(time.Duration(j) * time.Second), Kind: pollwarden.EventResponseReceived,
				Data: pollwarden.EventData{HTTPStatus: 200, State: "running", RequestsUsed: j + 1, MaxRequests: 12,
					DeadlineAt: &deadline, NextPollAt: &next, DelaySource: pollwarden.DelayLocalBackoff, Decision: "wait",
					RequestID: fmt.Sprintf("req-%d-%d", i, j)}}
		}
		if err := sqlite.AppendBulk(t.Context(), s, id, evs); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	t.Logf("built %d events in %v", ops*perOp, time.Since(start).Round(time.Millisecond))

	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start = time.Now()
	s = open(t, path, sqlite.Options{})
	defer s.Close()
	var v audit.Verifier
	if err := v.Walk(t.Context(), s, 2000); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	close(stop)
	if v.Pos() != ops*perOp || v.Operations() != ops {
		t.Fatalf("verified %d events of %d operations", v.Pos(), v.Operations())
	}
	t.Logf("verified %d events in %v; Go heap in use peaked at %.1f MiB", v.Pos(), elapsed.Round(time.Millisecond), float64(peak.Load())/(1<<20))
}
