package sqlite_test

import (
	"fmt"
	sync2 "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

// BenchmarkSave measures one OperationSave, the write a poll makes, at each
// durability level: without events (a baseline), and with two events (a
// status request and its response) kept plain or sealed.
func BenchmarkSave(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, events := range []string{"none", "plain", "sealed"} {
			b.Run(fmt.Sprintf("%s/events=%s", sync, events), func(b *testing.B) {
				opts := sqlite.Options{Synchronous: sync}
				if events == "sealed" {
					opts.Sealer = storetest.SealKey(b, 1)
				}
				s, err := sqlite.Open(b.Context(), b.TempDir()+"/bench.db", opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				now := time.Now()
				op := &pollwarden.Operation{ID: "bench", Contract: "report-export", Phase: pollwarden.PhaseWaiting,
					StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, MaxStatusRequests: 1 << 30}
				if err := s.OperationCreate(b.Context(), op, nil); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					op.StatusRequestsUsed++
					var evs []pollwarden.Event
					if events != "none" {
						evs = []pollwarden.Event{
							{At: now, Kind: pollwarden.EventRequestSent, Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed, MaxRequests: 12}},
							{At: now, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: 200, State: "running",
								RequestsUsed: op.StatusRequestsUsed, MaxRequests: 12, DeadlineAt: &op.DeadlineAt, NextPollAt: &now,
								DelaySource: pollwarden.DelayLocalBackoff, Decision: "wait"}},
						}
					}
					if err := s.OperationSave(b.Context(), pollwarden.SaveParams{Op: op, Now: now, Events: evs}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStep measures the store's side of a durable step as a
// scheduler makes it, with 32 steps in flight on 1,000 operations: the
// claim (lease taken, a request reserved, its event) and then the save
// (the answer, its event, the lease freed), each committed before it
// returns. b.N is the number of steps; reported: the process's CPU per
// step (the figure that holds on a shared machine) and steps per second.
func BenchmarkStep(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run("synchronous="+sync, func(b *testing.B) {
			const ops, inFlight = 1000, 32
			s, err := sqlite.Open(b.Context(), b.TempDir()+"/bench.db", sqlite.Options{Synchronous: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			now := time.Now()
			records := make([]*pollwarden.Operation, ops)
			for i := range records {
				records[i] = &pollwarden.Operation{ID: fmt.Sprintf("op-%04d", i), Contract: "report-export", Phase: pollwarden.PhaseWaiting,
					StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, MaxStatusRequests: 1 << 30}
				if err := s.OperationCreate(b.Context(), records[i], []pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.ResetTimer()
			groups0, writes0 := s.WriteGroups()
			cpu0 := processCPU(b)
			var wg sync2.WaitGroup
			for w := range inFlight {
				wg.Go(func() {
					for {
						k := next.Add(1) - 1
						if k >= int64(b.N) {
							return
						}
						// Each worker steps its own operations, as the
						// scheduler never steps one twice at once.
						op := records[(int(k)%(ops/inFlight))*inFlight+w]
						claimed, lease, err := s.OperationClaim(b.Context(), pollwarden.ClaimParams{OperationID: op.ID, Owner: "bench",
							Now: now, TTL: time.Minute, Have: op,
							Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
								op.StatusRequestsUsed++
								return op, []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent,
									Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed, MaxRequests: 12}}}
							}})
						if err != nil {
							b.Error(err)
							return
						}
						claimed.LastState = "running"
						claimed.NextPollAt = now.Add(time.Duration(k%97) * time.Millisecond)
						if err := s.OperationSave(b.Context(), pollwarden.SaveParams{Op: claimed, Lease: lease, Now: now, Release: true,
							Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: 200,
								State: "running", RequestsUsed: claimed.StatusRequestsUsed, MaxRequests: 12, DeadlineAt: &claimed.DeadlineAt,
								NextPollAt: &claimed.NextPollAt, DelaySource: pollwarden.DelayLocalBackoff, Decision: "wait"}}}}); err != nil {
							b.Error(err)
							return
						}
						records[(int(k)%(ops/inFlight))*inFlight+w] = claimed
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			cpu := processCPU(b) - cpu0
			groups, writes := s.WriteGroups()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/step")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			if groups > groups0 {
				b.ReportMetric(float64(writes-writes0)/float64(groups-groups0), "writes/group")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
