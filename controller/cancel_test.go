package controller

import (
	"context"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

var approver = pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}

// TestR23_SecondCancelOnlyWhenIdempotent: a cancel the provider refused
// leaves the operation cancelling; asking again sends a second request
// only where the contract documents cancel as idempotent.
func TestR23_SecondCancelOnlyWhenIdempotent(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  int
	}{
		{"cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\n", 1},
		{"cancel: {url: \"BASE/jobs/{job_id}/cancel\", idempotent: true}\n", 2},
	} {
		r := newRig(t, tc.extra)
		r.submit("op1", "unknown-job", policy.NewParams{}) // the fake answers its cancel 404
		ctx := context.Background()
		for range 2 {
			op, err := r.ctl.Cancel(ctx, r.ex, "op1", policy.DecisionParams{Actor: approver})
			if err != nil || op.Phase != pollwarden.PhaseCancelling || op.Cancel.HTTPStatus != 404 {
				t.Fatalf("%s: cancel: %v %+v", tc.extra, err, op)
			}
		}
		if n := r.srv.Cancels("unknown-job"); n != tc.want {
			t.Errorf("%s: the provider saw %d cancels, want %d", tc.extra, n, tc.want)
		}
	}
}

// TestR23_InterruptedCancelAfterACrash: a cancel left recorded by a
// process that died during the call is marked interrupted and not resent
// when the operation is next stepped; with an idempotent cancel it is
// sent again instead.
func TestR23_InterruptedCancelAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		extra   string
		cancels int
		state   pollwarden.CancelState
		phase   pollwarden.Phase
	}{
		{"cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\n", 0, pollwarden.CancelInterrupted, pollwarden.PhaseCancelling},
		{"cancel: {url: \"BASE/jobs/{job_id}/cancel\", idempotent: true}\n", 1, pollwarden.CancelAnswered, pollwarden.PhaseCancelled},
	} {
		r := newRig(t, tc.extra)
		r.srv.Script("j1", fp.State("running", nil))
		op := r.submit("op1", "j1", policy.NewParams{})
		ctx := context.Background()
		// What a process that died during the call leaves behind.
		now := r.clock.Now()
		rec, evs, err := policy.RequestCancel(op, r.ex.Spec(), policy.DecisionParams{Actor: approver}, now, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: rec, Events: evs, Now: now}); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute)
		res, err := r.ctl.Step(ctx, r.ex, "op1")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := r.store.OperationGet(ctx, "op1")
		if r.srv.Cancels("j1") != tc.cancels || got.Cancel.State != tc.state || got.Phase != tc.phase {
			t.Fatalf("%s: %d cancels, cancel %+v, phase %s (step %+v)", tc.extra, r.srv.Cancels("j1"), got.Cancel, got.Phase, res)
		}
		if tc.phase == pollwarden.PhaseCancelling && r.srv.Count("j1") != 1 {
			t.Fatalf("%s: the step did not go on observing: %d status requests", tc.extra, r.srv.Count("j1"))
		}
	}
}

// TestR23_InterruptedCancelSaidWhenTheBudgetIsSpent: a cancel left
// recorded by a process that died during the call, on an operation whose
// status budget is spent, is still marked interrupted before the gate
// escalates, so the record never keeps a cancel as merely "recorded" once
// its sender is gone. Nothing is sent.
func TestR23_InterruptedCancelSaidWhenTheBudgetIsSpent(t *testing.T) {
	r := newRig(t, "cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\n")
	r.srv.Script("j1", fp.State("running", nil))
	op := r.submit("op1", "j1", policy.NewParams{})
	ctx := context.Background()
	now := r.clock.Now()
	rec, evs, err := policy.RequestCancel(op, r.ex.Spec(), policy.DecisionParams{Actor: approver}, now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rec.StatusRequestsUsed = rec.MaxStatusRequests
	if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: rec, Events: evs, Now: now}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Minute)
	if _, err := r.ctl.Step(ctx, r.ex, "op1"); err != nil {
		t.Fatal(err)
	}
	got, _ := r.store.OperationGet(ctx, "op1")
	if got.Cancel == nil || got.Cancel.State != pollwarden.CancelInterrupted {
		t.Fatalf("cancel %+v, want interrupted (phase %s, reason %s)", got.Cancel, got.Phase, got.Reason)
	}
	if got.Phase != pollwarden.PhaseEscalated || got.Reason != pollwarden.ReasonRequestBudgetExhausted {
		t.Fatalf("phase %s reason %s, want escalated request_budget_exhausted", got.Phase, got.Reason)
	}
	if n, c := r.srv.Count("j1"), r.srv.Cancels("j1"); n != 0 || c != 0 {
		t.Fatalf("sent %d status requests and %d cancels, want none", n, c)
	}
}
