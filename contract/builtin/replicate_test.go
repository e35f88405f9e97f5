package builtin_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestReplayReplicatePrediction(t *testing.T) {
	start := time.Date(2023, 8, 16, 18, 57, 8, 0, time.UTC)
	const id = "vgcm4plb7tgzlyznry5d5jkgvu"
	runReplays(t, "replicate-prediction", []scenario{
		{name: "succeeded", bodies: []string{"pending", "running", "processing_with_partial_output", "succeeded"}, jobID: id, start: start,
			path: "/v1/predictions/" + id, outcome: pollwarden.PhaseSucceeded, resultHas: `"output":["https://`, story: "state processing → succeeded"},
		{name: "output removed", bodies: []string{"succeeded_data_removed"}, jobID: id, start: start,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "success state without a valid result"},
		{name: "failed", bodies: []string{"running", "failed"}, jobID: id, start: start,
			outcome: pollwarden.PhaseFailed, providerError: "OOM", story: "state processing → failed"},
		{name: "canceled", bodies: []string{"cancelled"}, jobID: id, start: start, outcome: pollwarden.PhaseCancelled, story: "state canceled"},
		{name: "aborted", bodies: []string{"pending", "aborted"}, jobID: id, start: start, outcome: pollwarden.PhaseExpired, story: "state starting → aborted"},
		{name: "rate limited", bodies: []string{"rate_limited", "succeeded"}, jobID: id, start: start,
			outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 3"},
		{name: "bad token", bodies: []string{"unauthenticated"}, jobID: id, start: start,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonAuthorizationDenied, story: "received 401"},
		{name: "unknown prediction", bodies: []string{"error"}, jobID: id, start: start,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
	})
}
