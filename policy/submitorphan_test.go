package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestR21_OrphanedSubmissionTurns: a daemon's turn on a submission left
// submitting sends a pending one once, re-sends an interrupted one only
// with the stored key, escalates one without a key with the question,
// and never sends one past its deadline.
func TestR21_OrphanedSubmissionTurns(t *testing.T) {
	c := testContract()
	c.Submit = &pollwarden.SubmitSpec{URL: "/v1/jobs", Method: "POST", JobIDPath: "id", MaxAttempts: 3}
	fresh := func(key string) *pollwarden.Operation {
		if key != "" {
			c.Submit.IdempotencyKeyHeader = "Idempotency-Key"
		} else {
			c.Submit.IdempotencyKeyHeader = ""
		}
		op, _, err := NewSubmission(c, NewParams{ID: "op-s"}, []byte(`{"a":1}`), key, t0)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	sent := func(op *pollwarden.Operation) *pollwarden.Operation {
		next, _, ok := SubmitSending(op, t0)
		if !ok {
			t.Fatal("not sendable")
		}
		return next
	}
	for _, tc := range []struct {
		name   string
		op     *pollwarden.Operation
		at     time.Time
		send   bool
		phase  pollwarden.Phase
		reason pollwarden.Reason
	}{
		{"pending is sent once", fresh(""), t0.Add(time.Minute), true, pollwarden.PhaseSubmitting, ""},
		{"pending past the deadline is not sent", fresh(""), t0.Add(48 * time.Hour), false, pollwarden.PhaseEscalated, pollwarden.ReasonDeadlineExceeded},
		{"interrupted without key escalates", sent(fresh("")), t0.Add(time.Minute), false, pollwarden.PhaseEscalated, pollwarden.ReasonIntegrationFailure},
		{"interrupted with key is re-sent", sent(fresh("k-1")), t0.Add(time.Minute), true, pollwarden.PhaseSubmitting, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, events, send := SubmitTurn(tc.op, c, tc.at)
			if next == nil || send != tc.send || next.Phase != tc.phase || next.Reason != tc.reason || len(events) == 0 {
				t.Fatalf("send %v, record %+v", send, next)
			}
			if send && next.Submission.IdempotencyKey != tc.op.Submission.IdempotencyKey {
				t.Fatalf("key %q, stored %q", next.Submission.IdempotencyKey, tc.op.Submission.IdempotencyKey)
			}
			if tc.reason == pollwarden.ReasonDeadlineExceeded {
				for _, o := range next.Escalation.Options {
					if o.ID == pollwarden.OptionResubmit {
						t.Fatal("resubmit offered past the deadline")
					}
				}
			}
		})
	}
	if next, _, send := SubmitTurn(fresh("").Clone(), c, t0); next == nil || !send {
		t.Fatal("a fresh submission is not sendable")
	}
	op := sent(fresh(""))
	if due := SubmitOrphanDue(op, 7*time.Second); !due.Equal(t0.Add(7 * time.Second)) {
		t.Fatalf("orphan due %v", due)
	}
}
