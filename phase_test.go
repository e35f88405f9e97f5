package pollwarden

import "testing"

// TestPhasePredicates: every phase is exactly one of submitting, polling,
// awaiting a decision or finished, and a name that is no phase is none of them.
func TestPhasePredicates(t *testing.T) {
	want := map[Phase]string{
		PhaseSubmitting: "submitting", PhaseWaiting: "polling", PhaseCancelling: "polling", PhaseEscalated: "decision",
		PhaseSucceeded: "finished", PhaseFailed: "finished", PhaseCancelled: "finished", PhaseExpired: "finished",
	}
	if got := Phases(); len(got) != len(want) {
		t.Fatalf("Phases() = %v, want the %d phases", got, len(want))
	}
	for _, p := range Phases() {
		var is []string
		if p.Submitting() {
			is = append(is, "submitting")
		}
		if p.Polling() {
			is = append(is, "polling")
		}
		if p.AwaitsDecision() {
			is = append(is, "decision")
		}
		if p.Finished() {
			is = append(is, "finished")
		}
		if len(is) != 1 || is[0] != want[p] || !p.Known() {
			t.Errorf("%s is %v (known %v), want exactly %s", p, is, p.Known(), want[p])
		}
	}
	for _, p := range []Phase{"", "terminal", "Waiting"} {
		if p.Submitting() || p.Polling() || p.AwaitsDecision() || p.Finished() || p.Known() {
			t.Errorf("%q counts as a phase", p)
		}
	}
}
