package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

// drawObservation picks one answer a provider might give.
func drawObservation(t *rapid.T, allowEnd bool) *pollwarden.Observation {
	kinds := []string{"pending", "pending", "pending", "503", "503ra", "429", "429ra", "timeout", "hint"}
	if allowEnd {
		kinds = append(kinds, "success", "failed", "unknown", "404")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "answer") {
	case "503":
		return obsCode(503, "")
	case "503ra":
		return obsCode(503, rapid.SampledFrom([]string{"1", "30", "120", "-3", "junk"}).Draw(t, "ra"))
	case "429":
		return obsCode(429, "")
	case "429ra":
		return obsCode(429, "10")
	case "timeout":
		return &pollwarden.Observation{Transport: pollwarden.TransportTimeout}
	case "404":
		return obsCode(404, "")
	case "hint":
		return obs200("running", func(b *pollwarden.BodyFacts) { b.PollAfter = float64(rapid.IntRange(-10, 4000).Draw(t, "hint")) })
	case "success":
		return obs200("succeeded", withURL("https://r.example.com/x"))
	case "failed":
		return obs200("failed", nil)
	case "unknown":
		return obs200("paused", nil)
	}
	return obs200("running", nil)
}

// simulate drives the core as the controller does, with late wake-ups, and
// checks the invariants at every request. It returns the final record and
// the number of requests sent.
func simulate(t *rapid.T, c *pollwarden.ContractSpec, allowEnd bool) (*pollwarden.Operation, int) {
	op, _, err := NewOperation(c, NewParams{ID: "sim", ProviderJobID: "j",
		MaxStatusRequests: rapid.IntRange(1, c.Limits.MaxStatusRequests).Draw(t, "maxReq")}, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := seeded(rapid.Uint64().Draw(t, "seed"))
	now, sent, spread := t0, 0, false
	for range 10000 {
		g := Gate(op, c, now)
		switch g.Verdict {
		case Done:
			return op, sent
		case Stop:
			return g.Op, sent
		case Wait:
			// A spread late wake-up changed the record; the controller
			// saves it before sleeping. R9: it is spread once, then sends.
			if g.Spread {
				if spread {
					t.Fatalf("a late wake-up was spread twice without a request between (now %s)", now)
				}
				if !g.Until.Before(op.DeadlineAt) || g.Until.Before(now) {
					t.Fatalf("spread to %s, outside [now %s, deadline %s)", g.Until, now, op.DeadlineAt)
				}
				spread = true
			}
			op = g.Op
			// Sometimes the process sleeps far too long (R9).
			now = g.Until.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "late")) * time.Duration(rapid.Int64Range(0, int64(20*time.Minute)).Draw(t, "lateBy")))
			continue
		}
		if !now.Before(op.DeadlineAt) {
			t.Fatalf("request at %s, not before the deadline %s", now, op.DeadlineAt)
		}
		if op.StatusRequestsUsed >= op.MaxStatusRequests {
			t.Fatalf("request %d over budget %d", op.StatusRequestsUsed+1, op.MaxStatusRequests)
		}
		res, _ := CountRequest(op, c, now)
		sent, spread = sent+1, false
		latency := time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "latency"))
		st := Decide(res, c, drawObservation(t, allowEnd), now.Add(latency), r)
		op = st.Op
		now = now.Add(latency)
		if op.Phase == pollwarden.PhaseWaiting && op.NextPollAt.Before(now) {
			t.Fatalf("next poll %s scheduled in the past (now %s)", op.NextPollAt, now)
		}
		if op.TransportFailuresUsed > op.MaxTransportFailures || op.RateLimitedUsed > op.MaxRateLimited {
			t.Fatalf("failure budgets exceeded: %d/%d %d/%d", op.TransportFailuresUsed, op.MaxTransportFailures, op.RateLimitedUsed, op.MaxRateLimited)
		}
	}
	t.Fatal("no outcome after 10000 steps")
	return nil, 0
}

func TestR11_NeverARequestPastTheDeadlineOrBudgetProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := testContract()
		c.Limits.MaxStatusRequests = rapid.IntRange(1, 40).Draw(t, "contractMax")
		c.Limits.Deadline = time.Duration(rapid.Int64Range(int64(time.Second), int64(2*time.Hour)).Draw(t, "deadline"))
		op, sent := simulate(t, c, true)
		if op.Phase.Polling() {
			t.Fatalf("ended in phase %s", op.Phase)
		}
		if sent != op.StatusRequestsUsed || sent > op.MaxStatusRequests {
			t.Fatalf("sent %d, recorded %d, budget %d", sent, op.StatusRequestsUsed, op.MaxStatusRequests)
		}
	})
}

func TestR11_BudgetIsExactProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := testContract()
		c.Limits.MaxStatusRequests = rapid.IntRange(1, 30).Draw(t, "contractMax")
		c.Limits.Deadline = 1000 * time.Hour // the budget, not the clock, must stop this run
		c.Limits.MaxTransportFailures, c.Limits.MaxRateLimited = 1000, 1000
		op, sent := simulate(t, c, false)
		if op.Reason != pollwarden.ReasonRequestBudgetExhausted || sent != op.MaxStatusRequests {
			t.Fatalf("reason %s after %d of %d requests; want request_budget_exhausted after exactly the budget", op.Reason, sent, op.MaxStatusRequests)
		}
	})
}
