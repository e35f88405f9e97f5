package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayAzureOperation(t *testing.T) {
	runReplays(t, "azure-operation", []scenario{
		{name: "succeeded", bodies: []string{"pending", "running", "succeeded"}, jobID: "22", path: "/operations/22?api-version=2024-11-01",
			outcome: pollwarden.PhaseSucceeded, story: "state Running → Succeeded"},
		{name: "action result", bodies: []string{"running", "succeeded_action_result"}, jobID: "22", vars: map[string]string{"api_version": "2023-04-01"},
			path: "/operations/22?api-version=2023-04-01", outcome: pollwarden.PhaseSucceeded, story: "state Running → Succeeded"},
		// Text Analytics writes the states in lower case.
		{name: "lower-case states", bodies: []string{"lowercase_notstarted", "lowercase_running", "lowercase_succeeded"}, jobID: "3f607326-0e8b-46c9-b420-336541a4e47f",
			outcome: pollwarden.PhaseSucceeded, providerState: "succeeded", story: "state Running → Succeeded (provider said succeeded)"},
		{name: "failed", bodies: []string{"running", "failed"}, jobID: "22", outcome: pollwarden.PhaseFailed, providerError: `"code"`, story: "state Running → Failed"},
		{name: "canceled", bodies: []string{"cancelled"}, jobID: "22", outcome: pollwarden.PhaseCancelled, story: "state Canceled"},
		{name: "rate limited", bodies: []string{"rate_limited", "succeeded"}, jobID: "22", outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 3"},
		{name: "purged", bodies: []string{"error"}, jobID: "22", outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
	})
}
