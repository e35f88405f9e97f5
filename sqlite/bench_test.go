package sqlite_test

import (
	"fmt"
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
