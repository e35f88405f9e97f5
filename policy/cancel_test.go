package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

var alice = pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}

// requested is op after alice's cancel, recorded and not yet answered.
func requested(t *testing.T, c *pollwarden.ContractSpec, op *pollwarden.Operation, now time.Time) *pollwarden.Operation {
	t.Helper()
	next, evs, err := RequestCancel(op, c, DecisionParams{Actor: alice, Note: "customer gave up"}, now, now.Add(time.Minute))
	if err != nil || next == nil {
		t.Fatalf("RequestCancel: %v, %v", next, err)
	}
	if len(evs) != 1 || evs[0].Kind != pollwarden.EventDecision || evs[0].Data.Actor.Name != "alice" ||
		evs[0].Data.RequestsUsed != op.StatusRequestsUsed || evs[0].Data.State != op.LastState || !strings.Contains(evs[0].Data.Decision, "recorded before it is sent") {
		t.Fatalf("the cancel request's event lacks who/state/requests used: %+v", evs)
	}
	return next
}

// TestR23_CancelIsRecordedBeforeItIsSent: the request alone makes the
// operation cancelling, with who and when, and claims nothing about the
// job; the answer is its own action and a 2xx is not yet an end.
func TestR23_CancelIsRecordedBeforeItIsSent(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonDeadlineExceeded)
	now := t0.Add(41 * time.Minute)
	rec := requested(t, c, op, now)
	k := rec.Cancel
	if rec.Phase != pollwarden.PhaseCancelling || rec.Escalation != nil || k.State != pollwarden.CancelRecorded ||
		k.RequestedBy != alice || !k.RequestedAt.Equal(now) || k.Attempts != 1 {
		t.Fatalf("recorded cancel: phase %s, %+v", rec.Phase, k)
	}
	if !rec.Phase.Polling() {
		t.Fatal("a cancelling operation must still be observed")
	}
	ans, evs := CancelAnswered(rec, c, 1, CancelAnswer{Sent: true, Status: 200, Detail: "POST … answered 200", State: "processing"}, now)
	if ans.Phase != pollwarden.PhaseCancelling || ans.Cancel.State != pollwarden.CancelAnswered || ans.Cancel.HTTPStatus != 200 ||
		evs[0].Kind != pollwarden.EventAction || !strings.Contains(evs[0].Data.Decision, "cancel sent, provider answered 200") {
		t.Fatalf("after a 200 that reports the job still running: %s %+v %+v", ans.Phase, ans.Cancel, evs)
	}
	if !ans.NextPollAt.Equal(now.Add(c.Backoff.Base)) {
		t.Fatalf("next observation at %s, want one base delay on", ans.NextPollAt)
	}
	done, _ := CancelAnswered(rec, c, 1, CancelAnswer{Sent: true, Status: 200, State: "cancelled"}, now)
	if done.Phase != pollwarden.PhaseCancelled || done.LastState != "cancelled" {
		t.Fatalf("the provider's answer said cancelled: %s", done.Phase)
	}
	unsent, _ := CancelAnswered(rec, c, 1, CancelAnswer{Detail: "credential env:X is not set"}, now)
	if unsent.Phase != pollwarden.PhaseEscalated || unsent.Cancel.InForce() || !strings.Contains(optionIDs(unsent), pollwarden.OptionCancel) {
		t.Fatalf("a cancel that was never sent: %s, %+v, options %s", unsent.Phase, unsent.Cancel, optionIDs(unsent))
	}
}

// TestR23_SecondCancelSendsNothing: once a cancel may have reached the
// provider, another sends nothing unless the contract says idempotent.
func TestR23_SecondCancelSendsNothing(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	rec := requested(t, c, op, t0)
	for _, st := range []pollwarden.CancelState{pollwarden.CancelRecorded, pollwarden.CancelAnswered, pollwarden.CancelUnanswered, pollwarden.CancelInterrupted} {
		rec.Cancel.State = st
		if next, evs, err := RequestCancel(rec, c, DecisionParams{Actor: alice}, t0, t0); next != nil || evs != nil || err != nil {
			t.Errorf("%s: a second cancel would be sent: %v %v %v", st, next, evs, err)
		}
	}
	c.Cancel.Idempotent = true
	again, _, err := RequestCancel(rec, c, DecisionParams{Actor: alice}, t0, t0)
	if err != nil || again == nil || again.Cancel.Attempts != 2 {
		t.Fatalf("idempotent cancel asked again: %v %v", again, err)
	}
	if _, _, err := RequestCancel(op, c, DecisionParams{Actor: pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}}, t0, t0); !errors.Is(err, pollwarden.ErrForbidden) {
		t.Fatalf("an agent cancelled: %v", err)
	}
	op.Phase = pollwarden.PhaseSucceeded
	if _, _, err := RequestCancel(op, c, DecisionParams{Actor: alice}, t0, t0); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("cancel of a finished operation: %v", err)
	}
	c.Cancel = nil
	if _, _, err := RequestCancel(newOp(t, c), c, DecisionParams{Actor: alice}, t0, t0); err == nil || !strings.Contains(err.Error(), "documents no cancel action") {
		t.Fatalf("cancel without a documented action: %v", err)
	}
}

// TestR23_ExtendAndAbandonDoNotUndoTheCancel: while cancelling, extend
// adds to the observation and abandon stops it; neither reopens waiting,
// and abandon never closes as failed.
func TestR23_ExtendAndAbandonDoNotUndoTheCancel(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	op.StatusRequestsUsed = 3
	rec := requested(t, c, op, t0.Add(time.Minute))
	ext, _, err := Apply(rec, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice}, t0.Add(time.Minute))
	if err != nil || ext.Phase != pollwarden.PhaseCancelling || ext.MaxStatusRequests != rec.MaxStatusRequests+4 || ext.Cancel == nil {
		t.Fatalf("extend while cancelling: %v %+v", err, ext)
	}
	bot := pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}
	if _, _, err := Apply(rec, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: bot}, t0); !errors.Is(err, pollwarden.ErrForbidden) {
		t.Fatalf("an agent extended: %v", err)
	}
	ab, evs, err := Apply(rec, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: bot}, t0.Add(2*time.Minute))
	if err != nil || ab.Phase != pollwarden.PhaseEscalated || ab.Cancel == nil || ab.MaxStatusRequests != 3 {
		t.Fatalf("abandon while cancelling: %v %+v", err, ab)
	}
	if Gate(ab, c, t0.Add(3*time.Minute)).Verdict != Done || optionIDs(ab) != pollwarden.OptionInspect ||
		!strings.Contains(evs[0].Data.Decision, "not failed") {
		t.Fatalf("an abandoned cancel must send nothing more and offer only the console: %s / %+v", optionIDs(ab), evs)
	}

	// Escalated while observing the cancel: cancel is not offered again,
	// extend goes back to cancelling, abandon stays escalated.
	esc := rec.Clone()
	Escalate(esc, c, pollwarden.ReasonRequestBudgetExhausted, "test", t0.Add(5*time.Minute))
	if got := optionIDs(esc); got != "extend,inspect_console,abandon" || !strings.Contains(esc.Escalation.Message, "Cancel at provider: asked by alice") {
		t.Fatalf("escalation after a cancel: %s\n%s", got, esc.Escalation.Message)
	}
	back, _, err := Apply(esc, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice}, t0.Add(6*time.Minute))
	if err != nil || back.Phase != pollwarden.PhaseCancelling {
		t.Fatalf("extend after an escalation while cancelling: %v %s", err, back.Phase)
	}
	closed, _, err := Apply(esc, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: alice}, t0.Add(6*time.Minute))
	if err != nil || closed.Phase != pollwarden.PhaseEscalated || optionIDs(closed) != pollwarden.OptionInspect {
		t.Fatalf("abandon after an escalation while cancelling: %v %s %s", err, closed.Phase, optionIDs(closed))
	}
}

// An extension while cancelling saturates at pollwarden.MaxCount like
// every other extension (bounds.go), never beyond it.
func TestExtendWhileCancellingSaturatesAtMaxCount(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	rec := requested(t, c, op, t0.Add(time.Minute))
	rec.MaxStatusRequests = pollwarden.MaxCount - 1
	ext, _, err := Apply(rec, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice}, t0.Add(time.Minute))
	if err != nil || ext.MaxStatusRequests != pollwarden.MaxCount {
		t.Fatalf("extend while cancelling from MaxCount-1: %v, budget %d; want %d", err, ext.MaxStatusRequests, pollwarden.MaxCount)
	}
}

// TestR23_InterruptedCancelIsNotResent: a cancel still recorded when the
// operation is looked at again is marked, not resent, unless idempotent.
func TestR23_InterruptedCancelIsNotResent(t *testing.T) {
	c := testContract()
	rec := requested(t, c, newOp(t, c), t0)
	next, evs, resend, ok := InterruptedCancel(rec, c, t0.Add(time.Minute))
	if !ok || resend || next.Cancel.State != pollwarden.CancelInterrupted || next.Phase != pollwarden.PhaseCancelling ||
		!strings.Contains(evs[0].Data.Decision, "not known to be sent") {
		t.Fatalf("interrupted: ok %v resend %v %+v %+v", ok, resend, next.Cancel, evs)
	}
	if _, _, _, ok := InterruptedCancel(next, c, t0); ok {
		t.Fatal("an interrupted cancel is handled once")
	}
	c.Cancel.Idempotent = true
	again, _, resend, ok := InterruptedCancel(rec, c, t0.Add(time.Minute))
	if !ok || !resend || again.Cancel.Attempts != 2 || again.Cancel.State != pollwarden.CancelRecorded {
		t.Fatalf("idempotent: ok %v resend %v %+v", ok, resend, again.Cancel)
	}
}

// TestContractDigestNamesWhatDiffers: a look-alike contract of the same
// name is refused with the section that changed; the same contract, or a
// record from before digests, passes.
func TestContractDigestNamesWhatDiffers(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	if err := CheckContract(op, testContract()); err != nil {
		t.Fatalf("the same contract: %v", err)
	}
	look := testContract()
	look.Escalation.ExtensionTime, look.Escalation.ExtensionRequests = 100000*time.Hour, 1000000
	err := CheckContract(op, look)
	if !errors.Is(err, pollwarden.ErrInvalid) || !strings.Contains(err.Error(), "escalation.extension changed") || strings.Contains(err.Error(), "status changed") {
		t.Fatalf("look-alike: %v", err)
	}
	near := testContract()
	near.Escalation.ExtensionTime = 100000*time.Hour + time.Nanosecond
	far := testContract()
	far.Escalation.ExtensionTime = 100000 * time.Hour
	if ContractDigest(near)["escalation.extension"] == ContractDigest(far)["escalation.extension"] {
		t.Fatal("two durations a nanosecond apart digest alike")
	}
	op.ContractDigest = nil
	if err := CheckContract(op, look); err != nil {
		t.Fatalf("a record without a digest is not checked: %v", err)
	}
	other := testContract()
	other.Name = "other"
	if err := CheckContract(newOp(t, c), other); err == nil {
		t.Fatal("another contract's name passed")
	}
}
