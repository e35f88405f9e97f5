package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestStorySubmissionLines(t *testing.T) {
	for _, tc := range []struct {
		e    pollwarden.Event
		want string
	}{
		{pollwarden.Event{Kind: pollwarden.EventSubmitted, Data: pollwarden.EventData{Detail: "pollwarden submits it (body sha256 ab12…); max transport failures 3"}},
			"submitted a job for pollwarden to submit"},
		{pollwarden.Event{Kind: pollwarden.EventSubmissionSent, Data: pollwarden.EventData{Detail: "attempt 1 of 3, with the stored idempotency key"}},
			"submission sent: attempt 1 of 3, with the stored idempotency key"},
		{pollwarden.Event{Kind: pollwarden.EventSubmissionAnswered, Data: pollwarden.EventData{Detail: "POST https://api.example.com/v1/jobs answered 202, job j1"}},
			"submission answered: POST https://api.example.com/v1/jobs answered 202, job j1"},
	} {
		if got := Line(tc.e, time.UTC); !strings.HasPrefix(got, tc.want) {
			t.Errorf("Line(%s) = %q, want it to start with %q", tc.e.Kind, got, tc.want)
		}
	}
}
