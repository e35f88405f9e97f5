package policy

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

// TestExtensionsNeverShrinkABudget: whatever the starting limits (up to
// the largest int, as a record stored before the bounds could hold) and
// whatever the contract's extension, no sequence of extensions makes a
// budget negative or smaller, none passes pollwarden.MaxCount unless it
// already did, and the option offered says exactly what Apply grants.
func TestExtensionsNeverShrinkABudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := testContract()
		c.Escalation.ExtensionRequests = rapid.IntRange(1, pollwarden.MaxCount).Draw(t, "extension")
		op, _, err := NewOperation(c, NewParams{ID: "op-1", ProviderJobID: "j"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		op.MaxStatusRequests = rapid.OneOf(rapid.IntRange(1, 100), rapid.IntRange(pollwarden.MaxCount-100, pollwarden.MaxCount),
			rapid.IntRange(1, math.MaxInt)).Draw(t, "max")
		op.MaxRateLimited = rapid.IntRange(1, math.MaxInt).Draw(t, "maxRateLimited")
		op.MaxTransportFailures = rapid.IntRange(1, math.MaxInt).Draw(t, "maxFailures")
		approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
		now := t0
		for i := range rapid.IntRange(1, 30).Draw(t, "extensions") {
			reason := rapid.SampledFrom([]pollwarden.Reason{pollwarden.ReasonRequestBudgetExhausted,
				pollwarden.ReasonRateLimited, pollwarden.ReasonProviderFailure, pollwarden.ReasonDeadlineExceeded}).Draw(t, "reason")
			esc := op.Clone()
			Escalate(esc, c, reason, "test", now)
			var offered *pollwarden.Option
			for j := range esc.Escalation.Options {
				if esc.Escalation.Options[j].ID == pollwarden.OptionExtend {
					offered = &esc.Escalation.Options[j]
				}
			}
			if offered == nil {
				t.Fatalf("extension %d: no extend option for %s", i, reason)
			}
			next, _, err := Apply(esc, c, DecisionParams{Option: pollwarden.OptionExtend, Actor: approver}, now)
			if err != nil {
				t.Fatalf("extension %d: %v", i, err)
			}
			for _, b := range []struct {
				name        string
				before, got int
			}{
				{"max status requests", op.MaxStatusRequests, next.MaxStatusRequests},
				{"max rate-limited", op.MaxRateLimited, next.MaxRateLimited},
				{"max transport failures", op.MaxTransportFailures, next.MaxTransportFailures},
			} {
				if b.got < b.before || b.got < 1 || (b.got > pollwarden.MaxCount && b.got != b.before) {
					t.Fatalf("extension %d (%s): %s went from %d to %d", i, reason, b.name, b.before, b.got)
				}
			}
			if offered.NewMaxStatusRequests != next.MaxStatusRequests || offered.ExtraStatusRequests != next.MaxStatusRequests-op.MaxStatusRequests {
				t.Fatalf("extension %d: offered budget %d (+%d), granted %d (was %d)", i,
					offered.NewMaxStatusRequests, offered.ExtraStatusRequests, next.MaxStatusRequests, op.MaxStatusRequests)
			}
			if !next.DeadlineAt.After(op.DeadlineAt) {
				t.Fatalf("extension %d: deadline %v did not move past %v", i, next.DeadlineAt, op.DeadlineAt)
			}
			op = next
			now = now.Add(time.Duration(rapid.IntRange(0, 3600).Draw(t, "later")) * time.Second)
		}
	})
}

// TestNewOperationBounds: not even an approver creates an operation with a
// limit above pollwarden.MaxCount or a deadline more than a year away.
func TestNewOperationBounds(t *testing.T) {
	c := testContract()
	for _, tc := range []struct {
		name string
		p    NewParams
		want string
	}{
		{"budget", NewParams{MaxStatusRequests: math.MaxInt}, "max status requests 9223372036854775807 is above 1000000"},
		{"failures", NewParams{MaxTransportFailures: pollwarden.MaxCount + 1}, "max transport failures 1000001 is above 1000000"},
		{"deadline", NewParams{Deadline: t0.Add(1000000 * time.Hour)}, "is more than 8784h (a year) from now"},
		{"operation id", NewParams{ID: "op-\xff"}, "operation id is not valid UTF-8"},
		{"job id", NewParams{ProviderJobID: "run-\xc3("}, "job id is not valid UTF-8"},
	} {
		p := tc.p
		p.MayRaise = true
		if p.ID == "" {
			p.ID = "op-1"
		}
		if p.ProviderJobID == "" {
			p.ProviderJobID = "j"
		}
		_, _, err := NewOperation(c, p, t0)
		if !errors.Is(err, pollwarden.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	p := NewParams{ID: "op-1", ProviderJobID: "j", MayRaise: true, MaxStatusRequests: pollwarden.MaxCount, Deadline: t0.Add(pollwarden.MaxSpan)}
	if _, _, err := NewOperation(c, p, t0); err != nil {
		t.Errorf("limits at the bounds: %v", err)
	}
}
