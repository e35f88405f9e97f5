package pollwarden

import (
	"errors"
	"fmt"
	"testing"
)

// TestRefusalCarriesKindFieldAndWords: a refusal is its sentinel to
// errors.Is, reads in a log as the sentinel's name and its words, and
// gives a person its words alone, wrapped or not.
func TestRefusalCarriesKindFieldAndWords(t *testing.T) {
	r := Refuse(ErrPhase, "escalation", "escalation %s is not open", "esc-2")
	wrapped := fmt.Errorf("decide: %w", r)
	if !errors.Is(wrapped, ErrPhase) || errors.Is(wrapped, ErrInvalid) {
		t.Fatalf("errors.Is: %v", wrapped)
	}
	if got := r.Error(); got != "not allowed in this phase: escalation esc-2 is not open" {
		t.Errorf("Error() = %q", got)
	}
	got, ok := AsRefusal(wrapped)
	if !ok || got.Field != "escalation" || RefusalText(wrapped) != "escalation esc-2 is not open" {
		t.Errorf("AsRefusal = %+v, %v; RefusalText = %q", got, ok, RefusalText(wrapped))
	}
	if s := RefusalText(errors.New("disk full")); s != "disk full" {
		t.Errorf("RefusalText of another error = %q", s)
	}
}
