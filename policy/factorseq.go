package policy

import "sync"

// invPhi is 1/φ, the step of the golden-ratio sequence.
const invPhi = 0.6180339887498949

// FactorSequence is the Rand a process gives DrawFactor for the operations
// it creates: a golden-ratio sequence u, u+1/φ, u+2/φ, … (mod 1) from a
// random start. Any run of consecutive operations then covers [0, 1)
// evenly instead of by chance, so a herd created together has as many
// operations in each slice of the factor's range as the log-uniform
// density says, and its waves of polls carry no sampling noise on top of
// their shape: herd burstiness over seeds 1–8 at n = 10,000 1.29–1.50 →
// 1.24–1.32 (docs/decisions.md, "Schedule: a factor sequence"). Each
// operation's factor stays inside R5's range and is kept on its record.
// It is safe for concurrent use.
type FactorSequence struct {
	mu      sync.Mutex
	r       Rand
	u       float64
	started bool
}

// NewFactorSequence starts a sequence whose first value is drawn from r.
func NewFactorSequence(r Rand) *FactorSequence { return &FactorSequence{r: r} }

// Float64 returns the next value of the sequence, in [0, 1).
func (s *FactorSequence) Float64() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.u, s.started = s.r.Float64(), true
		return s.u
	}
	s.u += invPhi
	if s.u >= 1 {
		s.u--
	}
	return s.u
}
