package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayAssemblyAITranscript(t *testing.T) {
	const id = "9ea68fd3-f953-42c1-9742-976c447fb463"
	runReplays(t, "assemblyai-transcript", []scenario{
		{name: "completed", bodies: []string{"pending", "running", "succeeded"}, jobID: id, path: "/v2/transcript/" + id,
			outcome: pollwarden.PhaseSucceeded, resultHas: `"text":"`, story: "state processing → completed"},
		{name: "completed without text", bodies: []string{"completed_without_text"}, jobID: id,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "success state without a valid result"},
		{name: "deleted by user", bodies: []string{"running", "completed_deleted_by_user"}, jobID: id,
			outcome: pollwarden.PhaseFailed, story: "state processing → completed_deleted"},
		{name: "error", bodies: []string{"failed"}, jobID: id, outcome: pollwarden.PhaseFailed, providerError: "Download error", story: "state error"},
		{name: "rate limited", bodies: []string{"rate_limited", "succeeded"}, jobID: id,
			outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 3"},
		{name: "not found", bodies: []string{"error"}, jobID: id,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
	})
}
