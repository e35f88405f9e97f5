package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/scheduler"
)

// TestSchedulerTakesOverSubmissions: the scheduler finds operations left
// in submitting by a submitter that died. One recorded but never sent is
// sent once and then polled; one sent without a recorded answer, under a
// contract without an idempotency key, is never sent again: it escalates
// integration_failure. One whose submitter may still be at work is left
// alone.
func TestSchedulerTakesOverSubmissions(t *testing.T) {
	r := newRig(t)
	r.srv.Script("sub-1", fp.Succeeded("https://files.example.com/sub-1.csv"))
	c, err := contract.Parse([]byte(contractYAML("sub", r.srv.URL(), "") + "submit: {url: \"" + r.srv.URL() + "/jobs\", job_id_path: id}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	r.set.Put(ex)
	ctx := context.Background()
	record := func(id string, age time.Duration, sent bool) {
		op, events, err := policy.NewSubmission(ex.Spec(), policy.NewParams{ID: id}, []byte(`{"n":1}`), "", time.Now().Add(-age))
		if err != nil {
			t.Fatal(err)
		}
		if sent {
			next, evs, ok := policy.SubmitSending(op, op.StartedAt)
			if !ok {
				t.Fatal("not sendable")
			}
			op, events = next, append(events, evs...)
		}
		if err := r.store.OperationCreate(ctx, op, events); err != nil {
			t.Fatal(err)
		}
	}
	record("unsent", time.Minute, false)
	record("unanswered", time.Minute, true)
	record("fresh", 0, false) // its submitter may be about to send it
	ctl := r.controller(r.store, "daemon", nil)
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Poll: 20 * time.Millisecond})
	run := start(sched)
	waitFor(t, "both orphans settled", 30*time.Second, func() bool {
		return r.get("unsent").Phase == pollwarden.PhaseSucceeded && r.get("unanswered").Phase == pollwarden.PhaseEscalated
	})
	time.Sleep(200 * time.Millisecond) // several more sweeps
	run.stop(t)
	if n := r.srv.Submits(); n != 1 {
		t.Errorf("the provider created %d jobs, want 1 (the unsent submission's)", n)
	}
	if op := r.get("unanswered"); op.Reason != pollwarden.ReasonIntegrationFailure || op.Submission.Attempts != 1 {
		t.Errorf("unanswered: %s, %d attempts", op.Reason, op.Submission.Attempts)
	}
	if op := r.get("fresh"); op.Phase != pollwarden.PhaseSubmitting || op.Submission.Attempts != 0 {
		t.Errorf("fresh: phase %s after %d attempts; a live submitter's record was taken over", op.Phase, op.Submission.Attempts)
	}
	noSchedulerGoroutines(t)
}
