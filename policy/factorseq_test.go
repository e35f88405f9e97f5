package policy

import (
	"math"
	"testing"
)

// TestFactorSequenceCoversTheRangeEvenly: any run of consecutive values
// puts into each tenth of [0, 1) a tenth of the run, give or take two
// (independent draws would be off by about ten per hundred), and the
// factors drawn from it stay inside R5's range.
func TestFactorSequenceCoversTheRangeEvenly(t *testing.T) {
	s := NewFactorSequence(seeded(7))
	for range 137 { // anywhere in the sequence, not just its start
		s.Float64()
	}
	const n = 1000
	var bins [10]int
	for range n {
		u := s.Float64()
		if !(u >= 0 && u < 1) {
			t.Fatalf("value %v outside [0, 1)", u)
		}
		bins[int(u*10)]++
	}
	for i, c := range bins {
		if math.Abs(float64(c)-n/10) > 2 {
			t.Errorf("tenth %d holds %d of %d consecutive values, want %d ± 2", i, c, n, n/10)
		}
	}
	for range 1000 {
		if f := DrawFactor(s); !ValidFactor(f) {
			t.Fatalf("factor %v outside R5's range", f)
		}
	}
	// Two sequences from different sources start apart.
	if NewFactorSequence(seeded(1)).Float64() == NewFactorSequence(seeded(2)).Float64() {
		t.Error("two sequences from different sources start at the same value")
	}
}
