package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayTextract(t *testing.T) {
	const job = "1e3b0a3b4fd2b1f0b7e4f1a3e0f8f0a1d7c3e9f5b2a4c6d8e0f1a2b3c4d5e6f7"
	scenarios := []scenario{
		{name: "succeeded", bodies: []string{"pending", "running", "succeeded"}, jobID: job, path: "/",
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"DocumentMetadata.Pages": 1}, story: "state IN_PROGRESS → SUCCEEDED"},
		{name: "succeeded, last page", bodies: []string{"succeeded_last_page"}, jobID: job, outcome: pollwarden.PhaseSucceeded},
		{name: "partial success is a success that shows its state", bodies: []string{"running", "partial_success"}, jobID: job,
			outcome: pollwarden.PhaseSucceeded, story: "state IN_PROGRESS → PARTIAL_SUCCESS"},
		{name: "failed", bodies: []string{"running", "failed"}, jobID: job, outcome: pollwarden.PhaseFailed, providerError: "Dummy Status Message"},
		{name: "invalid job id", bodies: []string{"error"}, jobID: job, outcome: pollwarden.PhaseEscalated,
			reason: pollwarden.ReasonIntegrationFailure, story: "received 400"},
		{name: "throttled with 400", bodies: []string{"running", "rate_limited", "succeeded"}, jobID: job,
			outcome: pollwarden.PhaseSucceeded, story: "rate-limited answer 1"},
		{name: "provisioned throughput exceeded", bodies: []string{"rate_limited_provisioned", "succeeded"}, jobID: job,
			outcome: pollwarden.PhaseSucceeded, story: "rate-limited answer 1"},
		{name: "qualified exception type", bodies: []string{"throttling_qualified_type", "succeeded"}, jobID: job,
			outcome: pollwarden.PhaseSucceeded, story: "rate-limited answer 1"},
		// A ThrottlingException with 500 is a server fault: a transport
		// failure within the budget, not a rate limit.
		{name: "throttling as a 500", bodies: []string{"throttling_500", "succeeded"}, jobID: job,
			outcome: pollwarden.PhaseSucceeded, story: "received 500"},
	}
	runReplays(t, "aws-textract-analysis", scenarios)

	t.Run("request", func(t *testing.T) {
		_, fake := replay(t, "aws-textract-analysis", scenario{name: "request", bodies: []string{"succeeded"}, jobID: job,
			outcome: pollwarden.PhaseSucceeded})
		r := fake.requests[0]
		if r.Method != "POST" || r.Header.Get("X-Amz-Target") != "Textract.GetDocumentAnalysis" ||
			r.Header.Get("Content-Type") != "application/x-amz-json-1.1" || r.Header.Get("X-Amz-Date") == "" {
			t.Errorf("request %s %v", r.Method, r.Header)
		}
		if want := `{"JobId":"` + job + `","MaxResults":1}`; fake.bodies[0] != want {
			t.Errorf("body %s, want %s", fake.bodies[0], want)
		}
	})
}
