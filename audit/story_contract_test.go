package audit

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestStoryContractChanged: an adopted edit reads as what changed, old →
// new, with the budget and deadline the operation goes on with.
func TestStoryContractChanged(t *testing.T) {
	dl := time.Date(2026, 4, 18, 10, 40, 0, 0, time.UTC)
	e := pollwarden.Event{At: dl.Add(-30 * time.Minute), Kind: pollwarden.EventContractChanged, Data: pollwarden.EventData{
		RequestsUsed: 2, MaxRequests: 8, DeadlineAt: &dl,
		Detail: "limits.max_status_requests 12 → 8 (contract 0a1b2c3d4e5f → 5f4e3d2c1b0a); taken up by cli:bob"}}
	want := "contract changed: limits.max_status_requests 12 → 8 (contract 0a1b2c3d4e5f → 5f4e3d2c1b0a); taken up by cli:bob; 2 of 8 status requests used, deadline 10:40:00"
	if got := Line(e, time.UTC); got != want {
		t.Errorf("Line = %q\nwant   %q", got, want)
	}
}
