package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestLoneWritesNeverLinger: claims and saves made one after the other,
// as a CLI command or a single caller makes them, never wait for other
// writes before their group is taken (the linger applies only while the
// writers of the last group are in flight), whatever the machine's speed.
func TestLoneWritesNeverLinger(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	defer s.Close()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 5 {
		op := &pollwarden.Operation{ID: fmt.Sprintf("op-%d", i), Phase: pollwarden.PhaseWaiting, StartedAt: now,
			DeadlineAt: now.Add(time.Hour), NextPollAt: now, MaxStatusRequests: 100}
		if err := s.OperationCreate(t.Context(), op, nil); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			claimed, lease, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: op.ID, Owner: "t",
				Now: now, TTL: time.Minute, Have: op,
				Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
					op.StatusRequestsUsed++
					return op, []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}
				}})
			if err != nil {
				t.Fatal(err)
			}
			claimed.CompletedPolls++
			if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: claimed, Lease: lease, Now: now, Release: true,
				Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventResponseReceived}}}); err != nil {
				t.Fatal(err)
			}
			op = claimed
		}
	}
	if n := s.LingeredGroups(); n != 0 {
		t.Errorf("%d groups of lone writes waited for others, want none", n)
	}
}
