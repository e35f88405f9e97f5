package policy

import (
	"strconv"
	"strings"
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

func TestR11_CountRequestBeforeSending(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	r, evs := CountRequest(op, c, t0)
	if r.StatusRequestsUsed != op.StatusRequestsUsed+1 {
		t.Fatalf("used %d after reserve, want %d", r.StatusRequestsUsed, op.StatusRequestsUsed+1)
	}
	if op.StatusRequestsUsed != 0 {
		t.Fatal("CountRequest mutated its input")
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
	r, _ := CountRequest(ok, c, t0)
	after := Decide(r, c, obs200("running", nil), t0, fixedRand(0)).Op
	if g := Gate(after, c, after.NextPollAt); g.Verdict != Stop {
		t.Fatalf("second call without a new approval: verdict %d, want Stop", g.Verdict)
	}
}

func TestR11_DeadlineRecheckedAfterTheReservation(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	reserved, _ := CountRequest(op, c, t0.Add(40*time.Minute-time.Millisecond))
	if g := StillInTime(reserved, c, t0.Add(40*time.Minute-time.Microsecond)); g.Verdict != Send {
		t.Fatalf("before the deadline: verdict %d, want Send", g.Verdict)
	}
	g := StillInTime(reserved, c, t0.Add(40*time.Minute))
	if g.Verdict != Stop || g.Op.Reason != pollwarden.ReasonDeadlineExceeded || g.Op.StatusRequestsUsed != 1 {
		t.Fatalf("at the deadline: verdict %d reason %s used %d; want Stop deadline_exceeded with the reservation kept",
			g.Verdict, g.Op.Reason, g.Op.StatusRequestsUsed)
	}
}

// polledOp is an operation after n completed polls, next poll due at due.
func polledOp(t *testing.T, c *pollwarden.ContractSpec, n int, due time.Time) *pollwarden.Operation {
	t.Helper()
	op, _, err := NewOperation(c, NewParams{ID: "late-op", ProviderJobID: "j", Rand: fixedRand(0.5)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	op.CompletedPolls, op.StatusRequestsUsed, op.NextPollAt = n, n, due
	return op
}

// TestR9_LateWakeUpIsSpreadOnceThenSends: an operation overdue by more
// than the base delay does not send at once; its one request moves to a
// time within its next delay, saved with an event, and the wake-up at that
// time sends even if it is late again.
func TestR9_LateWakeUpIsSpreadOnceThenSends(t *testing.T) {
	c := testContract()
	op := polledOp(t, c, 6, t0.Add(2*time.Minute))
	late := t0.Add(10 * time.Minute)
	g := Gate(op, c, late)
	if g.Verdict != Wait || !g.Spread {
		t.Fatalf("late wake-up: verdict %d spread %v, want a spread Wait", g.Verdict, g.Spread)
	}
	d := Delay(c.Backoff, 6, op.JitterFactor)
	if g.Until.Before(late) || !g.Until.Before(late.Add(d)) || !g.Op.NextPollAt.Equal(g.Until) || !g.Op.NextPollSpread {
		t.Fatalf("spread to %s (record %s, marked %v), want in [%s, %s)", g.Until, g.Op.NextPollAt, g.Op.NextPollSpread, late, late.Add(d))
	}
	// The story says it in words: how late, and that nothing is made up.
	if len(g.Events) == 0 {
		t.Fatal("late wake-up: no event recorded")
	}
	if d := g.Events[0].Data.Detail; !strings.Contains(d, "late wake-up, 8m0s after the check was due") || !strings.Contains(d, "the missed checks are not made up") {
		t.Fatalf("late wake-up told as %q", d)
	}
	if len(g.Events) != 1 || g.Events[0].Kind != pollwarden.EventNextCheckScheduled || !g.Events[0].Data.NextPollAt.Equal(g.Until) {
		t.Fatalf("events %+v, want one next_check_scheduled at the new time", g.Events)
	}
	if !op.NextPollAt.Equal(t0.Add(2*time.Minute)) || op.NextPollSpread {
		t.Fatal("Gate changed its input")
	}
	if again := Gate(op, c, late); !again.Until.Equal(g.Until) {
		t.Fatalf("the same record and time spread to %s, then %s", g.Until, again.Until)
	}
	// Woken 20 minutes after the spread time: the one request goes now.
	if g2 := Gate(g.Op, c, g.Until.Add(20*time.Minute)); g2.Verdict != Send {
		t.Fatalf("at the spread time: verdict %d, want Send (never spread twice)", g2.Verdict)
	}
	res, _ := CountRequest(g.Op, c, g.Until)
	if res.NextPollSpread {
		t.Fatal("the reservation kept the spread mark")
	}
}

func TestR9_WhenALateWakeUpIsNotSpread(t *testing.T) {
	c := testContract()
	for name, tc := range map[string]struct {
		op  *pollwarden.Operation
		now time.Time
	}{
		"late by no more than the base delay":    {polledOp(t, c, 3, t0.Add(time.Minute)), t0.Add(time.Minute + 5*time.Second)},
		"the first request (no interval missed)": {polledOp(t, c, 0, t0), t0.Add(10 * time.Minute)},
		"the first request after an extension":   {extendedOp(t, c, t0.Add(time.Minute)), t0.Add(time.Minute + 30*time.Second)},
		// 6 polls: the next delay is 60 s; 20 s before the deadline a spread
		// could land on or past it, so the request goes while it may.
		"a spread that could reach the deadline": {polledOp(t, c, 6, t0.Add(time.Minute)), t0.Add(40*time.Minute - time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "a spread that could reach the deadline" {
				// Choose a record whose spread fraction is far enough into
				// its delay to pass the deadline.
				for i := 0; spreadFraction(tc.op)*float64(Delay(c.Backoff, 6, tc.op.JitterFactor)) < float64(time.Second); i++ {
					tc.op.ID = "late-op-" + strconv.Itoa(i)
				}
			}
			if g := Gate(tc.op, c, tc.now); g.Verdict != Send {
				t.Fatalf("verdict %d until %s, want Send", g.Verdict, g.Until)
			}
		})
	}
}

// TestR9_SpreadFractionsCoverTheDelay: across many operations the spread
// fraction is close to uniform in [0, 1), so a crowd woken together is
// spread over the whole delay rather than bunched.
func TestR9_SpreadFractionsCoverTheDelay(t *testing.T) {
	const n, bins = 20000, 10
	var h [bins]int
	op := &pollwarden.Operation{CompletedPolls: 5}
	for i := range n {
		op.ID = "op-" + strconv.Itoa(i)
		f := spreadFraction(op)
		if f < 0 || f >= 1 {
			t.Fatalf("fraction %v outside [0, 1)", f)
		}
		h[int(f*bins)]++
	}
	for i, c := range h {
		if c < n/bins*92/100 || c > n/bins*108/100 {
			t.Errorf("bin %d: %d of %d", i, c, n)
		}
	}
}

// extendedOp is polledOp after an approver's extension: due at the
// decision, its next poll chosen by the extension.
func extendedOp(t *testing.T, c *pollwarden.ContractSpec, decidedAt time.Time) *pollwarden.Operation {
	op := polledOp(t, c, 3, decidedAt)
	op.NextPollSource = pollwarden.DelayManualExtension
	return op
}

// TestR9_BusyIsNotDown: the same late record is spread when the caller
// says its due time fell before the caller (re)started, and sent at once
// when the caller has been running since before it fell due (late only
// because the caller is busy). A caller that cannot tell spreads.
func TestR9_BusyIsNotDown(t *testing.T) {
	c := testContract()
	due := t0.Add(2 * time.Minute)
	op := polledOp(t, c, 6, due)
	late := due.Add(10 * time.Minute)
	for name, tc := range map[string]struct {
		up     Uptime
		spread bool
	}{
		"caller cannot tell":                     {Uptime{}, true},
		"restarted after the due time":           {Uptime{Since: due.Add(9 * time.Minute)}, true},
		"running since before the due time":      {Uptime{Since: due.Add(-time.Hour)}, false},
		"running since exactly the due time":     {Uptime{Since: due}, false},
		"resumed from a stall a moment after it": {Uptime{Since: due.Add(time.Millisecond)}, true},
	} {
		t.Run(name, func(t *testing.T) {
			g := GateUp(op, c, late, tc.up)
			switch {
			case tc.spread && (g.Verdict != Wait || !g.Spread):
				t.Fatalf("verdict %d spread %v, want a spread Wait", g.Verdict, g.Spread)
			case !tc.spread && (g.Verdict != Send || g.Spread || len(g.Events) != 0):
				t.Fatalf("verdict %d spread %v events %d, want Send at once", g.Verdict, g.Spread, len(g.Events))
			}
		})
	}
	// Uptime never lets a request past the checks that come first.
	if g := GateUp(op, c, op.DeadlineAt, Uptime{Since: t0}); g.Verdict != Stop {
		t.Fatalf("at the deadline while busy: verdict %d, want Stop", g.Verdict)
	}
}
