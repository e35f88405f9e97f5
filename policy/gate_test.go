package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestGate(t *testing.T) {
	c := testContract()
	base := newOp(t, c)
	for name, tc := range map[string]struct {
		mut        func(*pollwarden.Operation)
		now        time.Time
		want       Verdict
		wantReason pollwarden.Reason
	}{
		"R17 terminal operation sends nothing":       {mut: func(o *pollwarden.Operation) { o.Phase = pollwarden.PhaseSucceeded }, now: t0, want: Done},
		"R17 escalated operation sends nothing":      {mut: func(o *pollwarden.Operation) { o.Phase = pollwarden.PhaseEscalated }, now: t0, want: Done},
		"R11 deadline is checked before the request": {now: t0.Add(40 * time.Minute), want: Stop, wantReason: pollwarden.ReasonDeadlineExceeded},
		"R11 deadline wins over an exhausted budget": {
			mut: func(o *pollwarden.Operation) { o.StatusRequestsUsed = 12 }, now: t0.Add(41 * time.Minute),
			want: Stop, wantReason: pollwarden.ReasonDeadlineExceeded},
		"R11 budget checked before scheduling": {
			mut: func(o *pollwarden.Operation) { o.StatusRequestsUsed = 12 }, now: t0, want: Stop, wantReason: pollwarden.ReasonRequestBudgetExhausted},
		"R11 budget stops before the wait": {
			mut: func(o *pollwarden.Operation) { o.StatusRequestsUsed = 12; o.NextPollAt = t0.Add(time.Minute) },
			now: t0, want: Stop, wantReason: pollwarden.ReasonRequestBudgetExhausted},
		"R11 one request left may go": {mut: func(o *pollwarden.Operation) { o.StatusRequestsUsed = 11 }, now: t0, want: Send},
		"next poll not due: wait":     {mut: func(o *pollwarden.Operation) { o.NextPollAt = t0.Add(time.Minute) }, now: t0, want: Wait},
		"R9 late wake-up inside deadline: one send": {
			mut: func(o *pollwarden.Operation) { o.NextPollAt = t0.Add(time.Minute) }, now: t0.Add(30 * time.Minute), want: Send},
		"R9 late wake-up past deadline: stop, no request": {
			mut: func(o *pollwarden.Operation) { o.NextPollAt = t0.Add(time.Minute) }, now: t0.Add(3 * time.Hour),
			want: Stop, wantReason: pollwarden.ReasonDeadlineExceeded},
	} {
		t.Run(name, func(t *testing.T) {
			op := base.Clone()
			if tc.mut != nil {
				tc.mut(op)
			}
			g := Gate(op, c, tc.now)
			if g.Verdict != tc.want {
				t.Fatalf("verdict %d, want %d", g.Verdict, tc.want)
			}
			if tc.want == Stop {
				if g.Op.Phase != pollwarden.PhaseEscalated || g.Op.Reason != tc.wantReason {
					t.Fatalf("phase %s reason %s, want escalated %s", g.Op.Phase, g.Op.Reason, tc.wantReason)
				}
				if !hasEvent(g.Events, pollwarden.EventEscalated) {
					t.Fatal("no escalated event")
				}
				if op.Phase != pollwarden.PhaseWaiting && op.Phase != "" {
					t.Fatal("Gate mutated its input")
				}
			}
		})
	}
}

func TestR9_LateWakeUpSendsOneRequestThenWaits(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	op.NextPollAt = t0.Add(10 * time.Second)
	late := t0.Add(25 * time.Minute) // missed many intervals
	op = reservedAt(t, c, op, late)
	st := Decide(op, c, obs200("running", nil), late, fixedRand(0))
	if st.Op.StatusRequestsUsed != 1 {
		t.Fatalf("used %d, want 1", st.Op.StatusRequestsUsed)
	}
	if g := Gate(st.Op, c, late); g.Verdict != Wait || !g.Until.After(late) {
		t.Fatalf("right after the late request: verdict %d until %s, want Wait after %s", g.Verdict, g.Until, late)
	}
}

func TestR11_ReserveCountsBeforeSending(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	r, evs := Reserve(op, c, t0)
	if r.StatusRequestsUsed != op.StatusRequestsUsed+1 {
		t.Fatalf("used %d after reserve, want %d", r.StatusRequestsUsed, op.StatusRequestsUsed+1)
	}
	if op.StatusRequestsUsed != 0 {
		t.Fatal("Reserve mutated its input")
	}
	if len(evs) != 1 || evs[0].Kind != pollwarden.EventRequestSent || evs[0].Data.RequestsUsed != 1 || evs[0].Data.MaxRequests != 12 || evs[0].Data.DeadlineAt == nil {
		t.Fatalf("reserve event %+v: want status_request_sent with count 1 of 12 and the deadline", evs)
	}
}

func TestR16_UnsafeStatusMethodNeedsApprovalPerCall(t *testing.T) {
	c := testContract()
	c.Status.Method, c.Status.UnsafeMethod = "POST", true
	op := newOp(t, c)
	g := Gate(op, c, t0)
	if g.Verdict != Stop || g.Op.Reason != pollwarden.ReasonIntegrationFailure {
		t.Fatalf("unapproved unsafe call: verdict %d reason %s, want Stop integration_failure", g.Verdict, g.Op.Reason)
	}
	if g.Op.Escalation.Options[0].ID != pollwarden.OptionApproveCall {
		t.Fatalf("first option %q, want approve_call", g.Op.Escalation.Options[0].ID)
	}
	approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	ok, _, err := Apply(g.Op, c, DecisionParams{Option: pollwarden.OptionApproveCall, Actor: approver}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if v := Gate(ok, c, t0).Verdict; v != Send {
		t.Fatalf("after one approval: verdict %d, want Send", v)
	}
	r, _ := Reserve(ok, c, t0)
	after := Decide(r, c, obs200("running", nil), t0, fixedRand(0)).Op
	if g := Gate(after, c, after.NextPollAt); g.Verdict != Stop {
		t.Fatalf("second call without a new approval: verdict %d, want Stop", g.Verdict)
	}
}

func TestR11_DeadlineRecheckedAfterTheReservation(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	reserved, _ := Reserve(op, c, t0.Add(40*time.Minute-time.Millisecond))
	if g := StillInTime(reserved, c, t0.Add(40*time.Minute-time.Microsecond)); g.Verdict != Send {
		t.Fatalf("before the deadline: verdict %d, want Send", g.Verdict)
	}
	g := StillInTime(reserved, c, t0.Add(40*time.Minute))
	if g.Verdict != Stop || g.Op.Reason != pollwarden.ReasonDeadlineExceeded || g.Op.StatusRequestsUsed != 1 {
		t.Fatalf("at the deadline: verdict %d reason %s used %d; want Stop deadline_exceeded with the reservation kept",
			g.Verdict, g.Op.Reason, g.Op.StatusRequestsUsed)
	}
}
