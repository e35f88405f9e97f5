package cli

import (
	"context"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

// demoKey is the crashed submission's idempotency key; fixed so the
// tour's output is the same on every run.
const demoKey = "3f1c2a9e-5b7d-4c8e-9a01-demo00000001"

// crashedSubmission is the tour's last scene: a process records a
// submission, sends it, and dies before the answer is recorded; the
// provider has the job. The next process finds the record saying
// "sent, no answer", re-sends with the same stored key, and the provider
// answers with the job it already has: one job, not two.
func (r *demoRun) crashedSubmission(ctx context.Context, n int) error {
	const id = "demo-submit-report"
	body := []byte(`{"report":"q3-sales"}`)
	p := policy.NewParams{ID: id}
	fmt.Fprintf(r.out, "\n== %d. a submission interrupted between send and answer, then resumed\n", n)
	if err := r.crash(ctx, p, body); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "   the first process sent the job and died before recording the answer: the provider has %s\n", plural(r.srv.JobsCreated(), "job"))
	r.srv.Script("sub-1", fp.State("queued", nil), fp.Succeeded("https://results.example.com/q3-sales.csv"))
	ctl := r.controller() // a new process, with the same store
	fmt.Fprintf(r.out, "   a new process runs the same submit again (pollwarden submit --operation-id %s ...)\n", id)
	op, err := ctl.SubmitJob(ctx, r.ex, p, body)
	if err != nil {
		return err
	}
	if op, err = ctl.Wait(ctx, r.ex, op.ID, nil); err != nil {
		return err
	}
	r.printOutcome(op)
	if err := r.printStory(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "   the provider received %s with one idempotency key and created %s (%s)\n",
		plural(r.srv.Submits(), "submission"), plural(r.srv.JobsCreated(), "job"), op.ProviderJobID)
	return nil
}

// crash leaves the store as a process killed between sending the
// submission and recording its answer does: the operation and its limits
// recorded, attempt 1 recorded as sent before it left, the request
// received by the provider, and no answer kept.
func (r *demoRun) crash(ctx context.Context, p policy.NewParams, body []byte) error {
	ct := r.ex.Spec()
	now := r.clock.Now()
	op, events, err := policy.NewSubmission(ct, p, body, demoKey, now)
	if err != nil {
		return err
	}
	if err := r.st.OperationCreate(ctx, op, events); err != nil {
		return err
	}
	sent, events, ok := policy.SubmitSending(op, now)
	if !ok {
		return fmt.Errorf("demo: submission %s cannot be sent", op.ID)
	}
	if err := r.st.OperationSave(ctx, pollwarden.SaveParams{Op: sent, Events: events, Now: now}); err != nil {
		return err
	}
	u, err := contract.SubmitURL(ct, op.Vars)
	if err != nil {
		return err
	}
	r.probe.Submit(ctx, ct, u, body, demoKey) // the answer is lost with the process
	return nil
}
