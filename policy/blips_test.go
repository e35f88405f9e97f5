package policy

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

// Three 503s scattered among 200s, the 24-hour batch in small:
// under total they escalate provider_failure at the third; under
// consecutive each 200 clears the count and the job keeps waiting.
func TestTransportFailuresTotalOrConsecutive(t *testing.T) {
	blip, ok := obsCode(503, ""), obs200("running", nil)
	for name, tc := range map[string]struct {
		consecutive bool
		answers     []*pollwarden.Observation
		wantPhase   pollwarden.Phase
		wantUsed    int
	}{
		"total: scattered blips add up":          {false, []*pollwarden.Observation{blip, ok, blip, ok, blip}, pollwarden.PhaseEscalated, 3},
		"consecutive: a 200 clears the count":    {true, []*pollwarden.Observation{blip, ok, blip, ok, blip}, pollwarden.PhaseWaiting, 1},
		"consecutive: three in a row still stop": {true, []*pollwarden.Observation{ok, blip, blip, blip}, pollwarden.PhaseEscalated, 3},
		"total: a 200 keeps the count":           {false, []*pollwarden.Observation{blip, blip, ok}, pollwarden.PhaseWaiting, 2},
		"consecutive: a bad body does not clear": {true, []*pollwarden.Observation{blip, blip,
			{Status: 200, Body: pollwarden.BodyFacts{Problem: "body is not JSON"}}}, pollwarden.PhaseEscalated, 2},
	} {
		t.Run(name, func(t *testing.T) {
			c := testContract()
			c.Limits.MaxTransportFailures = 3
			c.Limits.ConsecutiveTransportFailures = tc.consecutive
			op := newOp(t, c)
			now := t0
			for _, obs := range tc.answers {
				op.NextPollAt = now
				op = reservedAt(t, c, op, now)
				op = Decide(op, c, obs, now, fixedRand(0)).Op
				now = op.NextPollAt
			}
			if op.Phase != tc.wantPhase || op.TransportFailuresUsed != tc.wantUsed {
				t.Fatalf("phase %s with %d transport failures, want %s with %d", op.Phase, op.TransportFailuresUsed, tc.wantPhase, tc.wantUsed)
			}
			if tc.wantPhase == pollwarden.PhaseEscalated && op.Reason != pollwarden.ReasonProviderFailure && op.Reason != pollwarden.ReasonIntegrationFailure {
				t.Fatalf("reason %s", op.Reason)
			}
		})
	}
}
