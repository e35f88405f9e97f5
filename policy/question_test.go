package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

var bob = pollwarden.Actor{Name: "bob", Role: pollwarden.RoleApprover}

// TestEscalationIDsAreNewPerQuestion: every escalation of one operation
// gets an id no earlier one had, kept across the record's copies.
func TestEscalationIDsAreNewPerQuestion(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	seen := map[string]bool{op.Escalation.ID: true}
	for i := range 5 {
		next, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice}, t0.Add(time.Duration(41+i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		Escalate(next, c, pollwarden.ReasonRequestBudgetExhausted, "again", t0.Add(time.Duration(42+i)*time.Minute))
		if id := next.Escalation.ID; id == "" || seen[id] {
			t.Fatalf("escalation %d has id %q, seen before or empty (%v)", i+2, id, seen)
		}
		seen[next.Escalation.ID] = true
		op = next
	}
}

// TestStaleQuestionIsRefused: a decision naming a question that was
// answered, or replaced, is refused with ErrPhase and changes nothing; one
// naming the open question, or none, is applied.
func TestStaleQuestionIsRefused(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	first := op.Escalation.ID
	if _, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice, Escalation: "esc-99"}, t0.Add(41*time.Minute)); !errors.Is(err, pollwarden.ErrPhase) ||
		!strings.Contains(err.Error(), "open one is "+first) {
		t.Fatalf("an unknown question: %v, want ErrPhase naming the open one", err)
	}
	next, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice, Escalation: first}, t0.Add(41*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d := next.LastDecision; d == nil || d.Escalation != first || d.Option != pollwarden.OptionExtend || d.By != alice {
		t.Fatalf("last decision %+v", next.LastDecision)
	}
	// Bob answers the same question on the record as it is now.
	_, _, err = Apply(next, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: bob, Escalation: first}, t0.Add(42*time.Minute))
	if !errors.Is(err, pollwarden.ErrPhase) || !strings.Contains(err.Error(), "already decided: extend by alice (approver)") {
		t.Fatalf("a second answer to %s: %v, want already decided by alice", first, err)
	}
	// The next question is answered by its own id, not the old one.
	Escalate(next, c, pollwarden.ReasonRequestBudgetExhausted, "again", t0.Add(50*time.Minute))
	if _, _, err := Apply(next, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: bob, Escalation: first}, t0.Add(51*time.Minute)); !errors.Is(err, pollwarden.ErrPhase) {
		t.Fatalf("an answer to the replaced question: %v", err)
	}
	if _, _, err := RequestCancel(next, withCancel(c), DecisionParams{Option: pollwarden.OptionCancel, Actor: bob, Escalation: first}, t0, t0); !errors.Is(err, pollwarden.ErrPhase) {
		t.Fatalf("a cancel answering the replaced question: %v", err)
	}
	if _, _, err := Apply(next, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: bob}, t0.Add(51*time.Minute)); err != nil {
		t.Fatalf("without an id the open question is answered: %v", err)
	}
}

func withCancel(c *pollwarden.ContractSpec) *pollwarden.ContractSpec {
	cc := *c
	cc.Cancel = &pollwarden.Action{URL: "https://api.example.com/jobs/{job_id}/cancel", Method: "POST"}
	return &cc
}

// TestApproveEachCallAsksANewQuestionPerCall: under approve_each_call the
// question for call 2 is not the one for call 1, so an approval of call 1
// posted again cannot approve call 2.
func TestApproveEachCallAsksANewQuestionPerCall(t *testing.T) {
	c := testContract()
	c.Status.Credential = &pollwarden.Credential{Header: "Authorization", Ref: "env:T", ApproveEachCall: true}
	op := newOp(t, c)
	g := Gate(op, c, t0)
	if g.Verdict != Stop || g.Op.Escalation == nil {
		t.Fatalf("the first call was not held for approval: %+v", g)
	}
	q1 := g.Op.Escalation.ID
	approved, _, err := Apply(g.Op, c, DecisionParams{Option: pollwarden.OptionApproveCall, Actor: alice, Escalation: q1}, t0)
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := CountRequest(approved, c, t0)
	g2 := Gate(sent, c, t0)
	if g2.Verdict != Stop || g2.Op.Escalation == nil || g2.Op.Escalation.ID == q1 {
		t.Fatalf("the second call's question: %+v, want a new id", g2.Op.Escalation)
	}
	if _, _, err := Apply(g2.Op, c, DecisionParams{Option: pollwarden.OptionApproveCall, Actor: bob, Escalation: q1}, t0); !errors.Is(err, pollwarden.ErrPhase) {
		t.Fatalf("call 1's approval posted again approved call 2: %v", err)
	}
}

// TestDecidedOperationSaysWhoDecided: an abandon closes the record with
// its question answered: the message says who decided what and when,
// never the old question, and a further decision says it was decided.
func TestDecidedOperationSaysWhoDecided(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	at := t0.Add(41 * time.Minute)
	next, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: alice}, at)
	if err != nil {
		t.Fatal(err)
	}
	msg := next.Escalation.Message
	if !strings.HasPrefix(msg, "Decided: abandon by alice (approver) at 2025-04-18 11:01:00 UTC") || strings.Contains(msg, "needs a decision") || strings.Contains(msg, "[extend]") {
		t.Fatalf("message of the abandoned operation: %q", msg)
	}
	if d := next.Escalation.Decided; d == nil || d.Escalation != op.Escalation.ID || !d.At.Equal(at) {
		t.Fatalf("escalation.decided %+v", d)
	}
	if _, _, err := Apply(next, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: bob}, at); err == nil || !strings.Contains(err.Error(), "already decided: abandon by alice") {
		t.Fatalf("a decision on the abandoned operation: %v", err)
	}
	// Abandoning a waiting operation is a decision with its own record.
	w, _ := abandonWaiting(newOp(t, c), DecisionParams{Option: pollwarden.OptionAbandon, Actor: bob}, at)
	if w.Escalation.ID == "" || w.Escalation.Decided == nil || !strings.HasPrefix(w.Escalation.Message, "Decided: abandon by bob (approver)") {
		t.Fatalf("abandoned while waiting: %+v", w.Escalation)
	}
}

// TestRetryCredentialOnlyWithAChangedCredential: retry_credential is
// offered and accepted only after authorization_denied with a refused
// credential on record and a credential that reads differently now; it
// lets one request go (adding one only when the budget is spent).
func TestRetryCredentialOnlyWithAChangedCredential(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	op.StatusRequestsUsed = op.MaxStatusRequests
	op.RefusedCredential = &pollwarden.RefusedCredential{Ref: "env:T", Key: "00", MAC: "ab"}
	Escalate(op, c, pollwarden.ReasonAuthorizationDenied, "401", t0)
	if got := OfferRetryCredential(op, false); strings.Contains(optionIDs(got), pollwarden.OptionRetryCredential) {
		t.Fatalf("offered with the credential unchanged: %s", optionIDs(got))
	}
	offered := OfferRetryCredential(op, true)
	if !strings.HasPrefix(optionIDs(offered), pollwarden.OptionRetryCredential) || strings.Contains(optionIDs(op), pollwarden.OptionRetryCredential) {
		t.Fatalf("offer %s (the stored record: %s)", optionIDs(offered), optionIDs(op))
	}
	p := DecisionParams{Option: pollwarden.OptionRetryCredential, Actor: alice, Escalation: op.Escalation.ID}
	if _, _, err := Apply(op, c, p, t0); !errors.Is(err, pollwarden.ErrPhase) {
		t.Fatalf("with the credential unchanged: %v, want ErrPhase", err)
	}
	p.CredentialChanged = true
	agent := p
	agent.Actor = pollwarden.Actor{Name: "a", Role: pollwarden.RoleAgent}
	if _, _, err := Apply(op, c, agent, t0); !errors.Is(err, pollwarden.ErrForbidden) {
		t.Fatalf("an agent's retry: %v, want ErrForbidden", err)
	}
	next, _, err := Apply(op, c, p, t0)
	if err != nil {
		t.Fatal(err)
	}
	if next.Phase != pollwarden.PhaseWaiting || next.MaxStatusRequests != op.StatusRequestsUsed+1 || next.StatusRequestsUsed != op.StatusRequestsUsed {
		t.Fatalf("after the retry: phase %s, %d of %d", next.Phase, next.StatusRequestsUsed, next.MaxStatusRequests)
	}
	other := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	if _, _, err := Apply(other, c, DecisionParams{Option: pollwarden.OptionRetryCredential, Actor: alice, CredentialChanged: true}, t0); !errors.Is(err, pollwarden.ErrPhase) {
		t.Fatalf("retry_credential on a budget escalation: %v", err)
	}
}
