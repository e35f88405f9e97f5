package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestNarrowing_AbandonWaitingNeedsNoEscalation: an agent (or an approver)
// may stop watching a waiting operation at any time; it grants nothing, so
// neither an escalation nor an approver is needed, and the record says who
// stopped it and that nothing went to the provider. Extending a waiting
// operation still needs an escalation.
func TestNarrowing_AbandonWaitingNeedsNoEscalation(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	now := t0.Add(3 * time.Minute)
	agent := pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}
	next, events, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: agent, Note: "not needed"}, now)
	if err != nil {
		t.Fatalf("abandon of a waiting operation by its agent: %v", err)
	}
	if next.Phase != pollwarden.PhaseFailed || next.FinishedAt == nil || !next.FinishedAt.Equal(now) {
		t.Errorf("after abandon: phase %s finished %v", next.Phase, next.FinishedAt)
	}
	if next.Escalation == nil || !strings.Contains(next.Escalation.Message, "build-agent") || len(next.Escalation.Options) != 0 {
		t.Errorf("abandon record: %+v", next.Escalation)
	}
	if next.StatusRequestsUsed != op.StatusRequestsUsed || next.MaxStatusRequests != op.MaxStatusRequests {
		t.Errorf("abandon changed the budget: %d/%d", next.StatusRequestsUsed, next.MaxStatusRequests)
	}
	if len(events) != 1 || events[0].Kind != pollwarden.EventDecision || events[0].Data.Actor == nil || events[0].Data.Actor.Name != "build-agent" {
		t.Errorf("events: %+v", events)
	}
	if op.Phase != pollwarden.PhaseWaiting {
		t.Errorf("Apply changed its input: %s", op.Phase)
	}
	approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	if _, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: approver}, now); err == nil {
		t.Error("extend of a waiting operation was accepted: only an escalation offers it")
	}
}
