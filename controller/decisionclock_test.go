package controller

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// withEscalation swaps the rig's contract for one whose escalation block
// is esc.
func (r *rig) withEscalation(esc string, extra ...string) {
	r.t.Helper()
	y := strings.Replace(contractYAML(r.srv.URL(), strings.Join(extra, "")), "escalation: {extension: {time: 15m, status_requests: 4}}", esc, 1)
	c, err := contract.Parse([]byte(strings.Replace(y, "BACKOFF_BASE", "5s", 1)))
	if err != nil {
		r.t.Fatal(err)
	}
	if r.ex, err = contract.Compile(c); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) lookup(name string) (*contract.Loaded, bool) {
	return r.ex, name == r.ex.Spec().Name
}

func (r *rig) kinds(id string) (out []pollwarden.EventKind, story []string) {
	r.t.Helper()
	evs, err := r.store.EventList(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out, audit.Story(evs, nil)
}

func count(ks []pollwarden.EventKind, k pollwarden.EventKind) (n int) {
	for _, x := range ks {
		if x == k {
			n++
		}
	}
	return n
}

func TestUnansweredEscalationIsRemindedThenExpiresToAbandon(t *testing.T) {
	r := newRig(t, "")
	r.withEscalation("escalation: {extension: {time: 15m, status_requests: 4}, remind_after: 30m, expire_after: 2h}")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 1})
	if op := r.wait("op1"); op.Phase != pollwarden.PhaseEscalated {
		t.Fatalf("phase %s, want escalated", op.Phase)
	}
	ctx := context.Background()
	tick := func() time.Time {
		t.Helper()
		next, err := r.ctl.DecisionTick(ctx, r.lookup)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	escAt := r.clock.Now()
	if next := tick(); !next.Equal(escAt.Add(30 * time.Minute)) {
		t.Fatalf("next due %s, want the first reminder at +30m", next)
	}
	for i := 1; i <= 3; i++ {
		r.clock.Advance(30 * time.Minute)
		tick()
		tick() // a second look at the same time sends no second reminder
		if ks, _ := r.kinds("op1"); count(ks, pollwarden.EventDecisionReminder) != i {
			t.Fatalf("after %d×30m: %d reminders, want %d", i, count(ks, pollwarden.EventDecisionReminder), i)
		}
	}
	r.clock.Advance(30 * time.Minute) // +2h
	if next := tick(); !next.IsZero() {
		t.Fatalf("after the expiry something is still due at %s", next)
	}
	op, err := r.store.OperationGet(ctx, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if op.Phase != pollwarden.PhaseFailed {
		t.Fatalf("phase %s after expiry, want failed (abandoned)", op.Phase)
	}
	ks, story := r.kinds("op1")
	if count(ks, pollwarden.EventDecisionExpired) != 1 || count(ks, pollwarden.EventDecision) != 1 || count(ks, pollwarden.EventDecisionReminder) != 3 {
		t.Fatalf("events %v: want 3 reminders, 1 expiry, 1 decision", ks)
	}
	text := strings.Join(story, "\n")
	for _, want := range []string{"decision request expired after 2h; default applied: abandon", "pollwarden (expiry) (approver) decided abandon: abandoned"} {
		if !strings.Contains(text, want) {
			t.Fatalf("story lacks %q:\n%s", want, text)
		}
	}
	tick()
	if ks2, _ := r.kinds("op1"); len(ks2) != len(ks) {
		t.Fatalf("a later tick added events: %v", ks2[len(ks):])
	}
}

func TestPersonDecidingFirstLeavesNothingToExpire(t *testing.T) {
	r := newRig(t, "")
	r.withEscalation("escalation: {extension: {time: 15m, status_requests: 4}, expire_after: 1h}")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 1})
	r.wait("op1")
	ctx := context.Background()
	alice := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	if _, err := r.ctl.Decide(ctx, r.ex, "op1", policy.DecisionParams{Option: pollwarden.OptionInspect, Actor: alice}); err == nil {
		t.Fatal("inspect is not offered without a console URL, yet was accepted")
	}
	if _, err := r.ctl.Decide(ctx, r.ex, "op1", policy.DecisionParams{Option: pollwarden.OptionAbandon, Actor: alice}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Hour)
	if _, err := r.ctl.DecisionTick(ctx, r.lookup); err != nil {
		t.Fatal(err)
	}
	if ks, _ := r.kinds("op1"); count(ks, pollwarden.EventDecisionExpired) != 0 {
		t.Fatalf("a decided escalation expired: %v", ks)
	}
}

// TestDecisionClockLoopExpiresOnTime runs the daemon's loop on the real
// clock inside a synctest bubble: two fake hours pass at once, and the
// expiry is applied by the loop itself.
func TestDecisionClockLoopExpiresOnTime(t *testing.T) {
	r := newRig(t, "")
	r.withEscalation("escalation: {extension: {time: 15m, status_requests: 4}, remind_after: 30m, expire_after: 2h}")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 1})
	r.wait("op1")
	// The escalation is re-dated to the bubble's clock, which starts at
	// 2000-01-01.
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		op, err := r.store.OperationGet(ctx, "op1")
		if err != nil {
			t.Fatal(err)
		}
		next := op.Clone()
		next.Escalation.At = time.Now()
		if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: next, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ctl := New(Options{Store: r.store, Clock: pollwarden.RealClock{}, Owner: "loop", Rand: rand.New(rand.NewPCG(1, 2)),
			Prober: prober.New(prober.Options{Now: time.Now})})
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ctl.RunDecisionClock(ctx, r.lookup, time.Hour, slog.New(slog.DiscardHandler)) }()
		time.Sleep(2*time.Hour + time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	ks, _ := r.kinds("op1")
	if count(ks, pollwarden.EventDecisionReminder) != 3 || count(ks, pollwarden.EventDecisionExpired) != 1 {
		t.Fatalf("events %v: want 3 reminders and the expiry", ks)
	}
}

// TestExpiryCancelsAtTheProviderWhenTheContractSaysSo: on_expiry:
// cancel_at_provider sends the cancel through the controller's Cancel, as
// a decision of pollwarden (expiry), once.
func TestExpiryCancelsAtTheProviderWhenTheContractSaysSo(t *testing.T) {
	r := newRig(t, "")
	r.withEscalation("escalation: {extension: {time: 15m, status_requests: 4}, expire_after: 1h, on_expiry: cancel_at_provider}",
		"cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\n")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 1})
	r.wait("op1")
	r.clock.Advance(time.Hour)
	ctx := context.Background()
	for range 2 {
		if _, err := r.ctl.DecisionTick(ctx, r.lookup); err != nil {
			t.Fatal(err)
		}
	}
	op, err := r.store.OperationGet(ctx, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if op.Phase != pollwarden.PhaseCancelling && op.Phase != pollwarden.PhaseCancelled {
		t.Fatalf("phase %s, want the cancel under way", op.Phase)
	}
	if n := r.srv.Cancels("j1"); n != 1 {
		t.Fatalf("the provider saw %d cancels, want 1", n)
	}
	_, story := r.kinds("op1")
	text := strings.Join(story, "\n")
	if !strings.Contains(text, "decision request expired after 1h; default applied: cancel_at_provider") || !strings.Contains(text, "pollwarden (expiry)") {
		t.Fatalf("story:\n%s", text)
	}
}
