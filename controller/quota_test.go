package controller

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

// A status request the shared quota holds back sends nothing and spends
// no budget: the wait is recorded with the delay source shared_quota
// until the key frees a slot, and the story says so.
func TestStepHeldByTheSharedQuota(t *testing.T) {
	r := newRig(t, "quota: {requests: 2, per: 1m}\n") // one each 30 s
	r.srv.Script("j1", fp.State("running", nil))
	r.srv.Script("j2", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	r.submit("op2", "j2", policy.NewParams{})
	ctx := context.Background()
	if res, err := r.ctl.Step(ctx, r.ex, "op1"); err != nil || !res.Sent {
		t.Fatalf("first step: %+v, %v", res, err)
	}
	now := r.clock.Now()
	res, err := r.ctl.Step(ctx, r.ex, "op2")
	if err != nil || res.Sent || !res.Until.Equal(now.Add(30*time.Second)) {
		t.Fatalf("second step within the quota's interval: %+v, %v; want nothing sent, until +30s", res, err)
	}
	op, _ := r.store.OperationGet(ctx, "op2")
	if op.StatusRequestsUsed != 0 || op.NextPollSource != pollwarden.DelaySharedQuota || r.srv.Count("j2") != 0 {
		t.Fatalf("held: used %d, source %s, provider saw %d; want 0, shared_quota, 0",
			op.StatusRequestsUsed, op.NextPollSource, r.srv.Count("j2"))
	}
	if !r.freeAt("op2", now) {
		t.Error("a held step left its lease")
	}
	story := storyOf(t, r, "op2")
	if !strings.Contains(story, "from the shared quota (held 30s: the shared quota of env:CTL_TOKEN allows 2 requests per 1m0s") {
		t.Errorf("the story does not say the wait for the shared quota:\n%s", story)
	}
	r.clock.Advance(30 * time.Second)
	if res, err := r.ctl.Step(ctx, r.ex, "op2"); err != nil || !res.Sent {
		t.Fatalf("at its slot: %+v, %v", res, err)
	}
	ks, err := r.store.KeyGet(ctx, "env:CTL_TOKEN")
	if err != nil || ks.WindowUsed != 2 || len(ks.Waiting) != 0 {
		t.Fatalf("key after two grants: %+v, %v", ks, err)
	}
}

// A 429 on one operation holds every operation under its credential
// until the reset, and the deadline still applies to a held one.
func TestRateLimitHoldsTheWholeKey(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.Code(429, map[string]string{"Retry-After": "120"}), fp.State("running", nil))
	r.srv.Script("j2", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	r.submit("op2", "j2", policy.NewParams{})
	ctx := context.Background()
	if res, err := r.ctl.Step(ctx, r.ex, "op1"); err != nil || !res.Sent {
		t.Fatalf("op1's step: %+v, %v", res, err)
	}
	now := r.clock.Now()
	res, err := r.ctl.Step(ctx, r.ex, "op2")
	if err != nil || res.Sent || !res.Until.Equal(now.Add(120*time.Second)) {
		t.Fatalf("op2 after op1's 429: %+v, %v; want held until the reset", res, err)
	}
	if n := r.srv.Count("j2"); n != 0 {
		t.Fatalf("the provider saw %d requests for j2 during the hold", n)
	}
	op, _ := r.store.OperationGet(ctx, "op2")
	if op.StatusRequestsUsed != 0 || op.RateLimitedUsed != 0 || op.NextPollSource != pollwarden.DelaySharedQuota {
		t.Fatalf("held op2: %+v", op)
	}
	r.clock.Advance(120 * time.Second)
	if res, err := r.ctl.Step(ctx, r.ex, "op2"); err != nil || !res.Sent {
		t.Fatalf("op2 at the reset: %+v, %v", res, err)
	}
}

// A hold past the deadline waits until the deadline, which escalates as
// always (deadline_exceeded), with nothing sent.
func TestHeldOperationStillMeetsItsDeadline(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.Code(429, map[string]string{"Retry-After": "7200"}))
	r.srv.Script("j2", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	op2 := r.submit("op2", "j2", policy.NewParams{})
	ctx := context.Background()
	r.ctl.Step(ctx, r.ex, "op1")
	res, err := r.ctl.Step(ctx, r.ex, "op2")
	if err != nil || res.Sent || !res.Until.Equal(op2.DeadlineAt) {
		t.Fatalf("held past the deadline: %+v, %v; want until the deadline %s", res, err, op2.DeadlineAt)
	}
	r.clock.Advance(res.Until.Sub(r.clock.Now()))
	res, err = r.ctl.Step(ctx, r.ex, "op2")
	if err != nil || res.Op.Reason != pollwarden.ReasonDeadlineExceeded || r.srv.Count("j2") != 0 {
		t.Fatalf("at the deadline: %+v, %v, %d sent", res.Op, err, r.srv.Count("j2"))
	}
}

// A provider's lying remaining count is refused with a reason the story
// tells, and does not reach the key.
func TestBadRemainingCountIsRejected(t *testing.T) {
	r := newRig(t, "quota: {requests: 100, per: 1m, remaining_header: x-left}\n")
	r.srv.Script("j1", fp.Step{JSON: map[string]any{"state": "running"}, Header: map[string]string{"x-left": "-4"}})
	r.submit("op1", "j1", policy.NewParams{})
	if res, err := r.ctl.Step(context.Background(), r.ex, "op1"); err != nil || !res.Sent {
		t.Fatalf("step: %+v, %v", res, err)
	}
	if story := storyOf(t, r, "op1"); !strings.Contains(story, "x-left -4 is negative: ignored") {
		t.Errorf("story lacks the rejection:\n%s", story)
	}
	if ks, err := r.store.KeyGet(context.Background(), "env:CTL_TOKEN"); err != nil || ks.Remaining != -1 {
		t.Fatalf("key: %+v, %v; want no remaining count learned", ks, err)
	}
}

func storyOf(t *testing.T, r *rig, id string) string {
	t.Helper()
	evs, err := r.store.EventList(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(audit.Story(evs, time.UTC), "\n")
}

// A cancel carries the credential: held by the shared quota for longer
// than MaxQuotaWait, it is refused (ErrQuotaHeld) with nothing sent or
// recorded; within it, it waits for its slot and goes.
func TestCancelTakesFromTheSharedQuota(t *testing.T) {
	r := newRig(t, "cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\nquota: {requests: 2, per: 2m}\n") // one each minute
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	r.submit("op2", "j2", policy.NewParams{})
	ctx := context.Background()
	if res, err := r.ctl.Step(ctx, r.ex, "op1"); err != nil || !res.Sent {
		t.Fatalf("step: %+v, %v", res, err)
	}
	_, err := r.ctl.Cancel(ctx, r.ex, "op2", policy.DecisionParams{Actor: approver})
	if !errors.Is(err, pollwarden.ErrQuotaHeld) || !strings.Contains(err.Error(), "env:CTL_TOKEN") {
		t.Fatalf("cancel a minute before a slot frees: %v; want ErrQuotaHeld naming the key", err)
	}
	if op, _ := r.store.OperationGet(ctx, "op2"); op.Cancel != nil || r.srv.Cancels("j2") != 0 {
		t.Fatalf("a held cancel was recorded or sent: %+v, %d sent", op.Cancel, r.srv.Cancels("j2"))
	}
	r.clock.Advance(40 * time.Second) // the slot is 20 s away: the cancel waits for it
	op, err := r.ctl.Cancel(ctx, r.ex, "op2", policy.DecisionParams{Actor: approver})
	if err != nil || op.Cancel == nil || r.srv.Cancels("j2") != 1 {
		t.Fatalf("cancel within the wait: %v, %+v, %d sent", err, op, r.srv.Cancels("j2"))
	}
	if ks, _ := r.store.KeyGet(ctx, "env:CTL_TOKEN"); ks.WindowUsed != 2 {
		t.Errorf("the cancel was not counted: %+v", ks)
	}
}

// A submission carries the credential: one the shared quota holds
// records nothing and is sent once its slot frees, never before.
func TestSubmitWaitsForTheSharedQuota(t *testing.T) {
	r := newSubmitRig(t, false, "}\nquota: {requests: 2, per: 1m") // one each 30 s
	r.script = []func(http.ResponseWriter, *http.Request){
		answer(202, r.srv.URL+"/jobs/j1", `{"id":"j1"}`), answer(202, r.srv.URL+"/jobs/j2", `{"id":"j2"}`)}
	ctx := context.Background()
	clock := r.ctl.clock
	start := clock.Now()
	if _, err := r.ctl.SubmitJob(ctx, r.ex, policy.NewParams{ID: "op-1"}, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	op, err := r.ctl.SubmitJob(ctx, r.ex, policy.NewParams{ID: "op-2"}, []byte(`{}`))
	if err != nil || op.ProviderJobID != "j2" {
		t.Fatalf("second submission: %+v, %v", op, err)
	}
	if waited := clock.Now().Sub(start); waited < 30*time.Second {
		t.Fatalf("the second submission went %s after the first; the quota allows one each 30s", waited)
	}
	if len(r.keys) != 2 {
		t.Fatalf("%d submissions reached the provider, want 2", len(r.keys))
	}
}
