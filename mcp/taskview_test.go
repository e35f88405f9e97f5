package mcp

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestPollIntervalIsTheTimeToTheNextRequest: a waiting task's pollInterval
// is exactly the time until pollwarden's next status request (a request
// due in 1,016 ms says 1016, not that plus a margin); a second once the
// request is due; a person's pace while escalated; none once final.
func TestPollIntervalIsTheTimeToTheNextRequest(t *testing.T) {
	now := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		op    pollwarden.Operation
		want  int64
		final bool
	}{
		{"next request in 1,016 ms", pollwarden.Operation{Phase: pollwarden.PhaseWaiting, NextPollAt: now.Add(1016 * time.Millisecond)}, 1016, false},
		{"next request in 7 min", pollwarden.Operation{Phase: pollwarden.PhaseWaiting, NextPollAt: now.Add(7 * time.Minute)}, (7 * time.Minute).Milliseconds(), false},
		{"due", pollwarden.Operation{Phase: pollwarden.PhaseWaiting, NextPollAt: now.Add(-time.Second)}, duePoll.Milliseconds(), false},
		{"escalated", pollwarden.Operation{Phase: pollwarden.PhaseEscalated}, decisionPoll.Milliseconds(), false},
		{"succeeded", pollwarden.Operation{Phase: pollwarden.PhaseSucceeded}, 0, true},
	} {
		got := pollInterval(&c.op, now)
		switch {
		case c.final && got != nil:
			t.Errorf("%s: pollInterval %d, want none", c.name, *got)
		case !c.final && (got == nil || *got != c.want):
			t.Errorf("%s: pollInterval %v, want %d ms", c.name, got, c.want)
		}
	}
}
