package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestFloorIsOneSetting: the floor is the contract's backoff base, and
// both the callback's early poll and a submission to send again wait
// exactly one Floor, so changing the base moves every site at once.
func TestFloorIsOneSetting(t *testing.T) {
	c := testContract()
	c.Backoff.Base = 7 * time.Second
	if Floor(c) != 7*time.Second {
		t.Fatalf("Floor = %s, want the backoff base 7s", Floor(c))
	}
	if got := SubmitRetryAt(c, t0); !got.Equal(t0.Add(Floor(c))) {
		t.Fatalf("SubmitRetryAt = %s, want one Floor after now", got)
	}
	op := newOp(t, c)
	answered := t0.Add(time.Minute)
	op.LastHTTP, op.LastHTTPAt = 200, &answered
	op.NextPollAt, op.NextPollSource = answered.Add(time.Hour), pollwarden.DelayPollHint
	w := Callback(op, c, answered.Add(time.Second))
	if !w.Woken || !w.Op.NextPollAt.Equal(answered.Add(Floor(c))) {
		t.Fatalf("a callback right after an answer: woken %v at %s, want one Floor after the answer", w.Woken, w.Op.NextPollAt)
	}
}
