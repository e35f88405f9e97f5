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
