package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestLiveLineNamesOperationAnswerAndWhoSetTheNextCheck: the live line
// carries the operation id, the last HTTP result, and whether the
// provider (Retry-After, hint, callback) or the local backoff set the
// next check, in the words every medium uses.
func TestLiveLineNamesOperationAnswerAndWhoSetTheNextCheck(t *testing.T) {
	t0 := time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)
	base := pollwarden.Operation{ID: "export-1a2b", LastState: "running", StartedAt: t0, DeadlineAt: t0.Add(40 * time.Minute),
		StatusRequestsUsed: 3, MaxStatusRequests: 12, LastHTTP: 200}
	for _, c := range []struct {
		name   string
		change func(*pollwarden.Operation)
		want   []string
	}{
		{"backoff", func(op *pollwarden.Operation) { op.NextPollSource = pollwarden.DelayLocalBackoff },
			[]string{"export-1a2b · running · HTTP 200 ·", "next check in 4s (local backoff)"}},
		{"retry-after", func(op *pollwarden.Operation) {
			op.LastHTTP, op.NextPollSource = 503, pollwarden.DelayRetryAfter
		}, []string{"HTTP 503", "next check in 4s (provider guidance)"}},
		{"hint", func(op *pollwarden.Operation) { op.NextPollSource = pollwarden.DelayPollHint },
			[]string{"next check in 4s (provider hint)"}},
		{"callback", func(op *pollwarden.Operation) { op.NextPollSource = pollwarden.DelayCallback },
			[]string{"next check in 4s (provider callback)"}},
		{"no answer", func(op *pollwarden.Operation) { op.LastHTTP = 0 }, []string{"· no HTTP answer ·"}},
		{"transport failures", func(op *pollwarden.Operation) {
			op.LastHTTP, op.TransportFailuresUsed, op.MaxTransportFailures = 503, 2, 3
		}, []string{"· requests 3/12 · transport failures 2/3 · next check"}},
		{"first", func(op *pollwarden.Operation) {
			op.StatusRequestsUsed, op.LastHTTP, op.LastState = 0, 0, ""
		}, []string{"export-1a2b · not yet observed · no request yet ·"}},
	} {
		op := base
		c.change(&op)
		got := progressText(&op, t0.Add(65*time.Second), t0.Add(61*time.Second))
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: live line %q lacks %q", c.name, got, want)
			}
		}
	}
}
