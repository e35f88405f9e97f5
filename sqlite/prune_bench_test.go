package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// BenchmarkPrune measures OperationPrune of finished operations of six
// events each, reported per operation pruned: what a daily prune of a busy
// store costs.
func BenchmarkPrune(b *testing.B) {
	const ops = 500
	s, err := sqlite.Open(b.Context(), b.TempDir()+"/bench.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	old := time.Now().Add(-48 * time.Hour)
	round := 0
	fill := func() {
		for i := range ops {
			op := &pollwarden.Operation{ID: fmt.Sprintf("op-%d-%d", round, i), Contract: "report-export", Phase: pollwarden.PhaseWaiting,
				StartedAt: old, DeadlineAt: old.Add(time.Hour), NextPollAt: old, MaxStatusRequests: 100}
			evs := make([]pollwarden.Event, 5)
			for j := range evs {
				evs[j] = pollwarden.Event{At: old, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{State: "running", HTTPStatus: 200}}
			}
			if err := s.OperationCreate(b.Context(), op, evs); err != nil {
				b.Fatal(err)
			}
			op.Phase, op.FinishedAt = pollwarden.PhaseSucceeded, &old
			fin := []pollwarden.Event{{At: old, Kind: pollwarden.EventSucceeded, Data: pollwarden.EventData{State: "succeeded"}}}
			if err := s.OperationSave(b.Context(), pollwarden.SaveParams{Op: op, Now: old, Events: fin}); err != nil {
				b.Fatal(err)
			}
		}
		round++
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		res, err := s.OperationPrune(b.Context(), pollwarden.PruneParams{FinishedBefore: time.Now().Add(-24 * time.Hour)})
		if err != nil || res.Operations != ops {
			b.Fatalf("prune: %+v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ops), "ns/op-pruned")
}
