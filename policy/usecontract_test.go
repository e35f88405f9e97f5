package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestUseContract: an approver moves an escalated operation onto the
// loaded contract of its name: back to waiting, due now, counters kept,
// limits lowered where the new contract's are lower and never raised, the
// decision in its story with what differed. An agent may not; nor may
// anyone when nothing differs, or for a finished operation; and the option
// is offered only on an escalated operation whose loaded contract differs.
func TestUseContract(t *testing.T) {
	old := testContract()
	op := newOp(t, old)
	now := op.StartedAt.Add(time.Minute)
	op.StatusRequestsUsed = 5
	Escalate(op, old, pollwarden.ReasonUnknownState, "state paused", now)
	current := testContract()
	current.State.Pending = append(current.State.Pending, "paused")
	current.Limits.MaxStatusRequests = 40 // raised: not granted by the move
	current.Limits.MaxTransportFailures = 1

	opt := UseContractOption(op, current)
	if opt == nil || opt.ID != pollwarden.OptionUseCurrentContract || !opt.GrantsAuthority ||
		!strings.Contains(opt.Label, "the state table changed") || !strings.Contains(opt.Label, "limits.max_status_requests 12 → 40") {
		t.Fatalf("option %+v", opt)
	}
	if UseContractOption(op, old) != nil {
		t.Fatal("offered although nothing differs")
	}

	agent := DecisionParams{Option: pollwarden.OptionUseCurrentContract, Actor: pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}}
	if _, _, err := UseContract(op, current, agent, now); !errors.Is(err, pollwarden.ErrForbidden) {
		t.Fatalf("an agent's move: %v, want ErrForbidden", err)
	}
	approver := DecisionParams{Option: pollwarden.OptionUseCurrentContract, Actor: pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}, Note: "paused is pending"}
	next, evs, err := UseContract(op, current, approver, now)
	if err != nil {
		t.Fatal(err)
	}
	if next.Phase != pollwarden.PhaseWaiting || !next.NextPollAt.Equal(now) || next.Escalation != nil {
		t.Fatalf("after the move: %s, next poll %v", next.Phase, next.NextPollAt)
	}
	if next.StatusRequestsUsed != 5 || next.MaxStatusRequests != 12 || next.MaxTransportFailures != 1 {
		t.Fatalf("counters and limits: used %d, max %d, max failures %d; want 5, 12 (not raised), 1 (lowered)",
			next.StatusRequestsUsed, next.MaxStatusRequests, next.MaxTransportFailures)
	}
	if CompareContract(next, current).Changed() {
		t.Fatal("the moved record still differs from the contract it moved onto")
	}
	if op.Phase != pollwarden.PhaseEscalated {
		t.Fatal("the record given was changed")
	}
	if len(evs) == 0 || evs[0].Kind != pollwarden.EventDecision || evs[0].Data.Option != pollwarden.OptionUseCurrentContract ||
		!strings.Contains(evs[0].Data.Decision, "the state table changed") || evs[0].Data.Actor.Name != "alice" {
		t.Fatalf("events %+v", evs)
	}
	if _, _, err := UseContract(next, current, approver, now); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("a move when nothing differs: %v, want ErrInvalid", err)
	}
	done := next.Clone()
	done.Phase = pollwarden.PhaseSucceeded
	if _, _, err := UseContract(done, testContract(), approver, now); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("a finished operation: %v, want ErrInvalid", err)
	}
	other := testContract()
	other.Name = "other"
	if _, _, err := UseContract(op, other, approver, now); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("a contract of another name: %v, want ErrInvalid", err)
	}
}
