package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

var (
	asker    = pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}
	approver = pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
)

func extendOf(t *testing.T, op *pollwarden.Operation) pollwarden.Option {
	t.Helper()
	for _, o := range op.Escalation.Options {
		if o.ID == pollwarden.OptionExtend {
			return o
		}
	}
	t.Fatalf("no extend option among %s", optionIDs(op))
	return pollwarden.Option{}
}

// An agent's 30m request, made while the operation waits, is the extend
// option of its next escalation, and the approver's extend grants it (the
// contract's fixed 15m otherwise).
func TestExtensionOfferedAsAsked(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	RequestExtension(op, c, asker, 30*time.Minute, 0, "the export queue is long", t0.Add(time.Minute))
	op.StatusRequestsUsed = 12
	at := t0.Add(40 * time.Minute)
	Escalate(op, c, pollwarden.ReasonRequestBudgetExhausted, "test", at)
	ext := extendOf(t, op)
	if ext.ExtraTime != "30m" || ext.ExtraStatusRequests != 4 || !ext.NewDeadline.Equal(op.DeadlineAt.Add(30*time.Minute)) {
		t.Fatalf("extend does not offer the asked 30m (with the contract's 4 requests): %+v", ext)
	}
	for _, want := range []string{"Extend waiting once by 30 minutes with 4 more status requests", "build-agent asked for 30m and 0 more status requests"} {
		if !strings.Contains(ext.Label, want) || !strings.Contains(op.Escalation.Message, want) {
			t.Errorf("label or message lacks %q:\n%s\n%s", want, ext.Label, op.Escalation.Message)
		}
	}
	next, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: approver}, at)
	if err != nil {
		t.Fatal(err)
	}
	if !next.DeadlineAt.Equal(at.Add(30*time.Minute)) || next.MaxStatusRequests != 16 || next.ExtensionAsked != nil {
		t.Fatalf("the extension granted deadline %s budget %d (asked kept: %v), want %s and 16, the request spent",
			next.DeadlineAt, next.MaxStatusRequests, next.ExtensionAsked, at.Add(30*time.Minute))
	}
	// Granted once, the request is spent: the next escalation offers the
	// contract's amount again.
	next.StatusRequestsUsed = next.MaxStatusRequests
	Escalate(next, c, pollwarden.ReasonRequestBudgetExhausted, "test", at.Add(time.Minute))
	if got := extendOf(t, next).ExtraTime; got != "15m" {
		t.Fatalf("after the grant, extend offers %s, want the contract's 15m", got)
	}
}

// A request made while the escalation awaits a decision rewrites its
// extend option and message line at once, keeping the question's id.
func TestExtensionAskedWhileEscalated(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	id := op.Escalation.ID
	old := extendOf(t, op).Label
	RequestExtension(op, c, asker, 30*time.Minute, 6, "slow", t0.Add(41*time.Minute))
	ext := extendOf(t, op)
	if ext.ExtraTime != "30m" || ext.ExtraStatusRequests != 6 || op.Escalation.ID != id {
		t.Fatalf("extend after the request: %+v (escalation %s, was %s)", ext, op.Escalation.ID, id)
	}
	if strings.Contains(op.Escalation.Message, old) || !strings.Contains(op.Escalation.Message, "[extend] "+ext.Label) {
		t.Fatalf("the message still offers the old extension:\n%s", op.Escalation.Message)
	}
	next, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: approver, Escalation: id}, t0.Add(42*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !next.DeadlineAt.Equal(t0.Add(72*time.Minute)) || next.MaxStatusRequests != 18 {
		t.Fatalf("granted deadline %s budget %d, want +30m from now and 12+6", next.DeadlineAt, next.MaxStatusRequests)
	}
}

// What an agent asks for is offered only within the contract's bounds:
// by default DefaultAskFactor times the fixed amounts, or the contract's
// max_time / max_status_requests; the label says the request was cut.
func TestExtensionAskWithinBounds(t *testing.T) {
	for name, tc := range map[string]struct {
		maxT     time.Duration
		maxN     int
		wantT    string
		wantMore int
	}{
		"default bounds":  {wantT: "1h", wantMore: 16},
		"contract bounds": {maxT: 20 * time.Minute, maxN: 5, wantT: "20m", wantMore: 5},
	} {
		t.Run(name, func(t *testing.T) {
			c := testContract()
			c.Escalation.ExtensionMaxTime, c.Escalation.ExtensionMaxRequests = tc.maxT, tc.maxN
			op := escalated(t, c, pollwarden.ReasonDeadlineExceeded)
			RequestExtension(op, c, asker, 3*time.Hour, 100, "a lot", t0.Add(41*time.Minute))
			ext := extendOf(t, op)
			if ext.ExtraTime != tc.wantT || ext.ExtraStatusRequests != tc.wantMore {
				t.Fatalf("extend offers %s and %d, want %s and %d", ext.ExtraTime, ext.ExtraStatusRequests, tc.wantT, tc.wantMore)
			}
			if !strings.Contains(ext.Label, "more than the contract's escalation allows (at most "+tc.wantT) {
				t.Fatalf("the label does not say the request was cut: %s", ext.Label)
			}
			next, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: approver}, t0.Add(41*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if next.MaxStatusRequests != op.MaxStatusRequests+tc.wantMore {
				t.Fatalf("granted budget %d, want %d", next.MaxStatusRequests, op.MaxStatusRequests+tc.wantMore)
			}
		})
	}
}

// A span of one unit reads "1 second", never "1 seconds" (an extension of
// 4 requests at a 150ms–300ms backoff lasts about that).
func TestSpanTextSingular(t *testing.T) {
	for in, want := range map[time.Duration]string{time.Second: "1 second", 2 * time.Second: "2 seconds", time.Hour * 3: "3 hours"} {
		if got := spanText(in, in); got != want {
			t.Errorf("spanText(%s) = %q, want %q", in, got, want)
		}
	}
}
