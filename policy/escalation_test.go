package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func escalated(t *testing.T, c *pollwarden.ContractSpec, r pollwarden.Reason) *pollwarden.Operation {
	t.Helper()
	op := newOp(t, c)
	op.StatusRequestsUsed, op.LastState, op.LastHTTP = 12, "running", 200
	at := t0.Add(38 * time.Minute)
	op.LastHTTPAt = &at
	Escalate(op, c, r, "test", t0.Add(40*time.Minute))
	return op
}

func optionIDs(op *pollwarden.Operation) string {
	var ids []string
	for _, o := range op.Escalation.Options {
		ids = append(ids, o.ID)
	}
	return strings.Join(ids, ",")
}

func TestR19_EscalationAsksForABoundedDecision(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	msg := op.Escalation.Message
	for _, want := range []string{"Operation: report-export-2025-04-18-01", "Provider job: exp_71c", "Last state: running",
		"Elapsed time: 40m0s", "Status requests: 12 of 12", "Last HTTP result: 200 at 10:58:00 UTC",
		"Stopped because: request_budget_exhausted", "Extend waiting once by 15 minutes with 4 more status requests"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(strings.ToLower(msg), "continue?") {
		t.Error("a bare continue? is never offered")
	}
	ext := op.Escalation.Options[0]
	if ext.ID != pollwarden.OptionExtend || ext.ExtraTime != "15m" || ext.ExtraStatusRequests != 4 ||
		ext.NewMaxStatusRequests != 16 || ext.NewDeadline == nil || !ext.NewDeadline.Equal(t0.Add(55*time.Minute)) {
		t.Fatalf("extend option does not state its cost and new limit: %+v", ext)
	}
}

func TestR19_OptionsPerReason(t *testing.T) {
	withCancel := testContract()
	noCancel := testContract()
	noCancel.Cancel = nil
	for name, tc := range map[string]struct {
		c      *pollwarden.ContractSpec
		reason pollwarden.Reason
		want   string
	}{
		"budget, cancel documented":    {withCancel, pollwarden.ReasonRequestBudgetExhausted, "extend,cancel_at_provider,inspect_console,abandon"},
		"budget, no cancel documented": {noCancel, pollwarden.ReasonRequestBudgetExhausted, "extend,inspect_console,abandon"},
		"authorization never retried":  {withCancel, pollwarden.ReasonAuthorizationDenied, "inspect_console,abandon"},
		"unknown state may wait again": {noCancel, pollwarden.ReasonUnknownState, "extend,inspect_console,abandon"},
		"deadline":                     {withCancel, pollwarden.ReasonDeadlineExceeded, "extend,cancel_at_provider,inspect_console,abandon"},
	} {
		t.Run(name, func(t *testing.T) {
			op := escalated(t, tc.c, tc.reason)
			if got := optionIDs(op); got != tc.want {
				t.Fatalf("options %s, want %s", got, tc.want)
			}
		})
	}
}

func TestR13_AuthorizationDeniedOffersNoExtension(t *testing.T) {
	op := escalated(t, testContract(), pollwarden.ReasonAuthorizationDenied)
	b, _ := json.Marshal(op.Escalation)
	if strings.Contains(strings.ToLower(string(b)), "extend") {
		t.Fatalf("authorization_denied escalation mentions extend: %s", b)
	}
}

func TestR21_NoResubmissionIsEverOffered(t *testing.T) {
	for _, r := range []pollwarden.Reason{pollwarden.ReasonDeadlineExceeded, pollwarden.ReasonRequestBudgetExhausted,
		pollwarden.ReasonRateLimited, pollwarden.ReasonUnknownState, pollwarden.ReasonAuthorizationDenied,
		pollwarden.ReasonProviderFailure, pollwarden.ReasonIntegrationFailure} {
		op := escalated(t, testContract(), r)
		b, _ := json.Marshal(op.Escalation)
		if strings.Contains(strings.ToLower(string(b)), "resubmit") || strings.Contains(strings.ToLower(string(b)), "retry the submission") {
			t.Fatalf("%s offers a resubmission: %s", r, b)
		}
	}
}

func TestR20_OnlyApproversGrantAuthority(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	agent := pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}
	for _, opt := range []string{pollwarden.OptionExtend, pollwarden.OptionCancel} {
		if _, _, err := Apply(op, c, DecisionParams{Option: opt, Actor: agent}, t0.Add(41*time.Minute)); !errors.Is(err, pollwarden.ErrForbidden) {
			t.Fatalf("agent chose %s: err %v, want ErrForbidden", opt, err)
		}
	}
	if _, _, err := Apply(op, c, DecisionParams{Option: "continue", Actor: agent}, t0); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("unknown option: err %v, want ErrInvalid", err)
	}
	if _, _, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionAbandon, Actor: agent}, t0); err != nil {
		t.Fatalf("abandon grants nothing and is open to an agent: %v", err)
	}
}

func TestR20_ExtensionAddsWithoutResettingCounters(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	op.TransportFailuresUsed, op.RateLimitedUsed = 1, 2
	now := t0.Add(45 * time.Minute)
	alice := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	next, evs, err := Apply(op, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: alice, Note: "tax export"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if next.StatusRequestsUsed != 12 || next.TransportFailuresUsed != 1 || next.RateLimitedUsed != 2 {
		t.Fatalf("counters reset: %d %d %d", next.StatusRequestsUsed, next.TransportFailuresUsed, next.RateLimitedUsed)
	}
	if next.MaxStatusRequests != 16 || !next.DeadlineAt.Equal(now.Add(15*time.Minute)) || next.Phase != pollwarden.PhaseWaiting {
		t.Fatalf("extension: max %d deadline %s phase %s", next.MaxStatusRequests, next.DeadlineAt, next.Phase)
	}
	if next.NextPollSource != pollwarden.DelayManualExtension {
		t.Fatalf("next poll source %s, want manual_extension", next.NextPollSource)
	}
	d := evs[0].Data
	if evs[0].Kind != pollwarden.EventDecision || d.Actor.Name != "alice" || d.State != "running" || d.Elapsed == "" ||
		d.RequestsUsed != 12 || d.MaxRequests != 16 || d.DeadlineAt == nil || !evs[0].At.Equal(now) {
		t.Fatalf("decision record lacks who/when/state/elapsed/calls/limits: %+v", evs[0])
	}
	if Gate(next, c, now).Verdict != Send {
		t.Fatal("after an extension the next request may go")
	}
}

func TestR20_AgentExtensionRequestGrantsNothing(t *testing.T) {
	c := testContract()
	op := escalated(t, c, pollwarden.ReasonRequestBudgetExhausted)
	before := *op
	evs := RequestExtension(op, c, pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}, time.Hour, 100, "please", t0)
	if op.MaxStatusRequests != before.MaxStatusRequests || !op.DeadlineAt.Equal(before.DeadlineAt) || op.Phase != pollwarden.PhaseEscalated {
		t.Fatal("an extension request changed the limits")
	}
	if len(evs) != 1 || evs[0].Kind != pollwarden.EventExtensionRequested {
		t.Fatalf("events %+v", evs)
	}
}
