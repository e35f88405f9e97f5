package policy

import "testing"

// BenchmarkCompareDigests is the daemon's per-step cost of telling an
// operation created under another version of its contract (the digests
// computed once per loaded contract), against computing them each time.
func BenchmarkCompareDigests(b *testing.B) {
	c := testContract()
	op := newOp(b, c)
	b.Run("cached", func(b *testing.B) {
		d := ContractDigest(c)
		for b.Loop() {
			CompareDigests(op, c, d)
		}
	})
	b.Run("each-time", func(b *testing.B) {
		for b.Loop() {
			CompareContract(op, c)
		}
	})
}
