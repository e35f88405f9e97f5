package policy

import (
	"testing"
	"time"
)

// BenchmarkDecide measures one decision from a parsed observation: a
// pending 200 that schedules the next poll by local backoff.
func BenchmarkDecide(b *testing.B) {
	c := testContract()
	op := newOp(b, c)
	op, _ = CountRequest(op, c, t0)
	obs := obs200("running", nil)
	now := t0.Add(time.Second)
	r := seeded(1)
	b.ReportAllocs()
	for b.Loop() {
		Decide(op, c, obs, now, r)
	}
}

// BenchmarkGate measures the pre-request checks.
func BenchmarkGate(b *testing.B) {
	c := testContract()
	op := newOp(b, c)
	b.ReportAllocs()
	for b.Loop() {
		Gate(op, c, t0)
	}
}

// TestDecideAllocations: a decision allocates at most six times (its
// record's copy, the copy's slices, the events, the next poll's time):
// Decide runs for every answer, and copying the record's maps, which no
// decision changes, was most of its allocations.
func TestDecideAllocations(t *testing.T) {
	if raceOn {
		t.Skip("the race detector changes what allocates")
	}
	c := testContract()
	op := newOp(t, c)
	op, _ = CountRequest(op, c, t0)
	obs := obs200("running", nil)
	now := t0.Add(time.Second)
	r := seeded(1)
	if n := testing.AllocsPerRun(200, func() { Decide(op, c, obs, now, r) }); n > 6 {
		t.Fatalf("Decide allocates %.1f times, want at most 6", n)
	}
}
