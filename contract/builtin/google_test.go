package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayGoogleLRO(t *testing.T) {
	const name = "projects/example-project/locations/us-central1/operations/operation-example"
	const path = "/v1/" + name
	runReplays(t, "google-lro", []scenario{
		{name: "succeeded", bodies: []string{"pending", "running", "succeeded"}, jobID: name, path: path,
			outcome: pollwarden.PhaseSucceeded, resultHas: `"@type":"type.googleapis.com/`, story: "state running → succeeded"},
		{name: "empty response (a delete)", bodies: []string{"succeeded_empty_response"}, jobID: name,
			outcome: pollwarden.PhaseSucceeded, resultHas: `google.protobuf.Empty`, story: "state succeeded"},
		{name: "failed", bodies: []string{"running", "failed"}, jobID: name, outcome: pollwarden.PhaseFailed, providerError: `"code"`, story: "state running → failed"},
		{name: "cancelled", bodies: []string{"cancelled"}, jobID: name, outcome: pollwarden.PhaseCancelled, story: `state cancelled (provider said "done, error.code 1")`},
		{name: "done without result", bodies: []string{"done_without_result"}, jobID: name,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonUnknownState, story: `state done_without_result (provider said "done, neither error nor response")`},
		// RetryInfo.retryDelay in the body is the wait.
		{name: "rate limited with RetryInfo", bodies: []string{"rate_limited", "succeeded"}, jobID: name,
			outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 53, rate-limited answer 1"},
		{name: "rate limited without RetryInfo", bodies: []string{"rate_limited_without_retryinfo", "succeeded"}, jobID: name,
			outcome: pollwarden.PhaseSucceeded, story: "received 429, rate-limited answer 1"},
		{name: "purged", bodies: []string{"error"}, jobID: name, outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
	})
}
