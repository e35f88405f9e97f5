package sqlite_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// BenchmarkSave measures one OperationSave carrying two events (a status
// request and its response), the write a poll makes, at each durability
// level.
func BenchmarkSave(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run(sync, func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), b.TempDir()+"/bench.db", sqlite.Options{Synchronous: sync})
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
				evs := []pollwarden.Event{
					{At: now, Kind: pollwarden.EventRequestSent, Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed}},
					{At: now, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: 200, State: "running"}},
				}
				if err := s.OperationSave(b.Context(), pollwarden.SaveParams{Op: op, Now: now, Events: evs}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
