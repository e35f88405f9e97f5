package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestCompareContract: an edit that only lowers limits is adoptable and
// says each limit old → new; one that raises a limit, or touches the
// state table, the status call (its hosts, its credential) or anything
// else, is not; the same file is no change at all.
func TestCompareContract(t *testing.T) {
	op := newOp(t, testContract())
	if ch := CompareContract(op, testContract()); ch.Changed() || ch.Adoptable {
		t.Fatalf("the same contract: %+v", ch)
	}
	edit := func(f func(c *pollwarden.ContractSpec)) ContractChange {
		c := testContract()
		f(c)
		return CompareContract(op, c)
	}
	lowered := edit(func(c *pollwarden.ContractSpec) { c.Limits.MaxStatusRequests = 8; c.Limits.Deadline = 20 * time.Minute })
	if !lowered.Adoptable || strings.Join(lowered.Changes, ", ") != "limits.deadline 40m → 20m, limits.max_status_requests 12 → 8" {
		t.Fatalf("lowered limits: %+v", lowered)
	}
	if lowered.From == lowered.To || len(lowered.From) != 12 {
		t.Fatalf("digests %q → %q", lowered.From, lowered.To)
	}
	for name, f := range map[string]func(c *pollwarden.ContractSpec){
		"a raised limit":      func(c *pollwarden.ContractSpec) { c.Limits.MaxStatusRequests = 13 },
		"one lowered, one up": func(c *pollwarden.ContractSpec) { c.Limits.MaxStatusRequests = 8; c.Limits.MaxRateLimited = 9 },
		"the request rate":    func(c *pollwarden.ContractSpec) { c.Limits.MaxRequestsPerSecond = 50 },
		"a new success state": func(c *pollwarden.ContractSpec) { c.State.Success = append(c.State.Success, "running") },
		"another allowed host": func(c *pollwarden.ContractSpec) {
			c.Status.AllowedHosts = append(c.Status.AllowedHosts, "evil.example")
		},
		"another credential": func(c *pollwarden.ContractSpec) { c.Status.Credential.Ref = "env:OTHER" },
		"a faster backoff":   func(c *pollwarden.ContractSpec) { c.Backoff.Base = time.Millisecond },
		"a larger extension": func(c *pollwarden.ContractSpec) { c.Escalation.ExtensionRequests = 400 },
		"lowered and new state": func(c *pollwarden.ContractSpec) {
			c.Limits.MaxStatusRequests = 8
			c.State.Pending = append(c.State.Pending, "paused")
		},
	} {
		if ch := edit(f); !ch.Changed() || ch.Adoptable {
			t.Errorf("%s: %+v, want a change that is not adoptable", name, ch)
		}
	}
	if ch := edit(func(c *pollwarden.ContractSpec) { c.Status.Credential.Ref = "env:OTHER" }); !strings.Contains(strings.Join(ch.Changes, ", "), "credential env:EXPORT_API_TOKEN → env:OTHER") {
		t.Errorf("credential change not said: %v", ch.Changes)
	}
	old := op.Clone()
	old.ContractLimits = nil // a record from before the limits were kept
	c := testContract()
	c.Limits.MaxStatusRequests = 8
	if ch := CompareContract(old, c); !ch.Changed() || ch.Adoptable {
		t.Errorf("limits not on record: %+v, want refused", ch)
	}
}

// TestAdoptContract: the operation goes on with each limit lowered to
// the new file's, its counters as they were, the new digests kept, and
// an event that says what changed.
func TestAdoptContract(t *testing.T) {
	op := newOp(t, testContract())
	op.StatusRequestsUsed, op.TransportFailuresUsed = 5, 1
	c := testContract()
	c.Limits.MaxStatusRequests, c.Limits.Deadline = 8, 20*time.Minute
	ch := CompareContract(op, c)
	next, ev := AdoptContract(op, c, ch, t0.Add(time.Minute), "cli:bob")
	if next.MaxStatusRequests != 8 || next.StatusRequestsUsed != 5 || next.TransportFailuresUsed != 1 ||
		!next.DeadlineAt.Equal(t0.Add(20*time.Minute)) || next.MaxTransportFailures != 3 {
		t.Fatalf("adopted: max %d used %d/%d deadline %s", next.MaxStatusRequests, next.StatusRequestsUsed, next.TransportFailuresUsed, next.DeadlineAt)
	}
	if op.MaxStatusRequests != 12 {
		t.Fatal("the record given was changed")
	}
	if CompareContract(next, c).Changed() {
		t.Fatal("the adopted record still differs from the new contract")
	}
	if ev.Kind != pollwarden.EventContractChanged || !strings.Contains(ev.Data.Detail, "limits.max_status_requests 12 → 8") ||
		!strings.Contains(ev.Data.Detail, ch.From+" → "+ch.To) || ev.Data.MaxRequests != 8 || ev.Data.RequestsUsed != 5 {
		t.Fatalf("event %+v", ev)
	}
	// A budget already spent past the new limit stays as spent.
	spent := op.Clone()
	spent.StatusRequestsUsed = 10
	if next, _ := AdoptContract(spent, c, ch, t0, "x"); next.MaxStatusRequests != 10 {
		t.Fatalf("spent budget: max %d, want 10", next.MaxStatusRequests)
	}
	// An operation whose own limit is already lower keeps it.
	low := op.Clone()
	low.MaxStatusRequests, low.StatusRequestsUsed = 4, 2
	if next, _ := AdoptContract(low, c, ch, t0, "x"); next.MaxStatusRequests != 4 {
		t.Fatalf("own lower limit raised to %d", next.MaxStatusRequests)
	}
}
