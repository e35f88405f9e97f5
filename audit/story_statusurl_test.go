package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestStoryNamesAJobGivenByStatusURL: an operation created from a status
// URL has no job id; its story says so rather than "started watching job ,".
func TestStoryNamesAJobGivenByStatusURL(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := pollwarden.Event{Kind: pollwarden.EventSubmitted, At: at, Data: pollwarden.EventData{DeadlineAt: &at, MaxRequests: 3, Detail: "d"}}
	if l := Line(e, time.UTC); !strings.HasPrefix(l, "started watching a job by its status URL, deadline 03:04:05") {
		t.Fatalf("story line %q", l)
	}
	e.Data.ProviderJobID = "j1"
	if l := Line(e, time.UTC); !strings.HasPrefix(l, "started watching job j1, deadline") {
		t.Fatalf("story line %q", l)
	}
	e = pollwarden.Event{Kind: pollwarden.EventStateChanged, At: at, Data: pollwarden.EventData{State: "ended_after_cancel", PrevState: "canceling", ProviderState: "ended"}}
	if l := Line(e, time.UTC); l != "state changed canceling → ended_after_cancel (provider said ended)" {
		t.Fatalf("story line %q", l)
	}
}
