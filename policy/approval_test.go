package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// A credential marked approve_each_call makes even a GET wait for an
// approver before every status call; the question names the call of the
// budget, the job and the credential; an agent's approval is refused; one
// approval lets exactly one call out.
func TestApproveEachCallCredential(t *testing.T) {
	c := testContract()
	c.Status.Credential.ApproveEachCall = true
	if c.Status.Method != "GET" || c.Status.UnsafeMethod {
		t.Fatal("the test needs a safe GET status call")
	}
	op := newOp(t, c)
	g := Gate(op, c, t0)
	if g.Verdict != Stop || g.Op.Reason != pollwarden.ReasonIntegrationFailure {
		t.Fatalf("first call without approval: verdict %d reason %s, want Stop integration_failure", g.Verdict, g.Op.Reason)
	}
	esc := g.Op.Escalation
	if esc.Options[0].ID != pollwarden.OptionApproveCall || !esc.Options[0].GrantsAuthority {
		t.Fatalf("first option %+v, want approve_call granting authority", esc.Options[0])
	}
	for _, want := range []string{"request 1 of 12", "exp_71c", "env:EXPORT_API_TOKEN"} {
		if !strings.Contains(esc.Options[0].Label, want) || !strings.Contains(esc.Message, want) {
			t.Errorf("question does not state %q:\nlabel %s\nmessage %s", want, esc.Options[0].Label, esc.Message)
		}
	}
	for _, o := range esc.Options {
		if o.ID == pollwarden.OptionExtend {
			t.Errorf("an approval request offers extend: %+v", esc.Options)
		}
	}

	agent := pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}
	if _, _, err := Apply(g.Op, c, DecisionParams{Option: pollwarden.OptionApproveCall, Actor: agent}, t0); !errors.Is(err, pollwarden.ErrForbidden) {
		t.Fatalf("agent approval: err %v, want ErrForbidden", err)
	}
	approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	ok, evs, err := Apply(g.Op, c, DecisionParams{Option: pollwarden.OptionApproveCall, Actor: approver}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Kind != pollwarden.EventDecision || evs[0].Data.Actor.Name != "alice" || evs[0].Data.RequestsUsed != 0 {
		t.Fatalf("decision event %+v: want alice's decision with the calls made so far", evs[0])
	}
	if v := Gate(ok, c, t0).Verdict; v != Send {
		t.Fatalf("after one approval: verdict %d, want Send", v)
	}
	r, _ := CountRequest(ok, c, t0)
	if r.ApprovedCalls != 0 {
		t.Fatalf("approved calls after one request: %d, want 0", r.ApprovedCalls)
	}
	after := Decide(r, c, obs200("running", nil), t0, fixedRand(0)).Op
	g2 := Gate(after, c, after.NextPollAt)
	if g2.Verdict != Stop || !strings.Contains(g2.Op.Escalation.Options[0].Label, "request 2 of 12") {
		t.Fatalf("second call without a new approval: verdict %d, options %+v; want Stop asking for request 2", g2.Verdict, g2.Op.Escalation)
	}
}

// Without the mark, the same GET contract sends without asking.
func TestCredentialWithoutApproveEachCallSends(t *testing.T) {
	c := testContract()
	if v := Gate(newOp(t, c), c, t0).Verdict; v != Send {
		t.Fatalf("verdict %d, want Send", v)
	}
}
