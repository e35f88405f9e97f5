package policy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// t0 is the fixed start of every table test.
var t0 = time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)

// fixedRand always draws the same value, so a jittered delay is exact.
type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

func testContract() *pollwarden.ContractSpec {
	return &pollwarden.ContractSpec{
		Version: 1, Name: "report-export",
		Status: pollwarden.StatusCall{
			URL: "https://api.example.com/v1/jobs/{job_id}", Method: "GET", Timeout: 10 * time.Second,
			MaxBodyBytes: 1 << 20, AllowedHosts: []string{"api.example.com"},
			Credential: &pollwarden.Credential{Header: "Authorization", Scheme: "Bearer", Ref: "env:EXPORT_API_TOKEN"},
		},
		State: pollwarden.StateTable{
			Path: "state", Pending: []string{"queued", "running", "processing"}, Success: []string{"succeeded"},
			Failure: []string{"failed"}, Cancelled: []string{"cancelled"}, Expired: []string{"expired"},
		},
		Result:             pollwarden.ResultSpec{Require: []pollwarden.Field{{Path: "result.url", Kind: pollwarden.KindURL}}, ErrorPath: "error"},
		Hints:              pollwarden.HintPaths{PollAfterSeconds: "poll_after_seconds", NextCheckAt: "next_check_at", JobExpiresAt: "expires_at"},
		NotFoundPendingFor: 30 * time.Second,
		Backoff:            pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second},
		Limits:             pollwarden.Limits{Deadline: 40 * time.Minute, MaxStatusRequests: 12, MaxTransportFailures: 3, MaxRateLimited: 3},
		Escalation:         pollwarden.EscalationSpec{ExtensionTime: 15 * time.Minute, ExtensionRequests: 4, ConsoleURL: "https://console.example.com/jobs/{job_id}"},
		Cancel:             &pollwarden.Action{URL: "https://api.example.com/v1/jobs/{job_id}/cancel", Method: "POST"},
	}
}

func newOp(t testing.TB, c *pollwarden.ContractSpec) *pollwarden.Operation {
	t.Helper()
	op, _, err := NewOperation(c, NewParams{ID: "report-export-2025-04-18-01", ProviderJobID: "exp_71c"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// reserved returns op after n reserved-and-completed polls at time at,
// ready for the next Decide.
func reservedAt(t testing.TB, c *pollwarden.ContractSpec, op *pollwarden.Operation, at time.Time) *pollwarden.Operation {
	t.Helper()
	g := Gate(op, c, at)
	if g.Verdict != Send {
		t.Fatalf("gate at %s: verdict %d, want Send", at.Format(time.TimeOnly), g.Verdict)
	}
	r, _ := CountRequest(op, c, at)
	return r
}

func obs200(state string, extra func(*pollwarden.BodyFacts)) *pollwarden.Observation {
	o := &pollwarden.Observation{Status: 200, Body: pollwarden.BodyFacts{State: state, HasState: true}}
	if extra != nil {
		extra(&o.Body)
	}
	return o
}

func obsCode(code int, retryAfter string) *pollwarden.Observation {
	return &pollwarden.Observation{Status: code, RetryAfter: retryAfter}
}

func seeded(seed uint64) Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func hasEvent(evs []pollwarden.Event, k pollwarden.EventKind) bool {
	for _, e := range evs {
		if e.Kind == k {
			return true
		}
	}
	return false
}
