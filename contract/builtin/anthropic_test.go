package builtin_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// anthropicStart is the fixtures' created_at.
var anthropicStart = time.Date(2024, 9, 24, 18, 37, 25, 0, time.UTC)

func TestReplayAnthropicMessageBatch(t *testing.T) {
	const id = "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"
	const results = "https://api.anthropic.com/v1/messages/batches/" + id + "/results"
	runReplays(t, "anthropic-message-batch", []scenario{
		{name: "ended", bodies: []string{"pending", "succeeded"}, jobID: id, start: anthropicStart, path: "/v1/messages/batches/" + id,
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"results_url": results}, story: "state in_progress → ended"},
		// The reference's own example: in_progress with every time field
		// set (all 2024-08-20T18:37:24Z) is still pending.
		{name: "reference example", bodies: []string{"running", "succeeded"}, jobID: id, start: time.Date(2024, 8, 20, 18, 0, 0, 0, time.UTC),
			outcome: pollwarden.PhaseSucceeded, story: "state in_progress"},
		{name: "ended with an errored request", bodies: []string{"ended_with_errored_request"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"results_url": results}},
		{name: "ended after cancel", bodies: []string{"canceling", "ended_cancel_initiated"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseCancelled, providerState: "ended", story: "state canceling → ended_after_cancel (provider said ended)"},
		{name: "every request expired", bodies: []string{"pending", "expired"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseExpired, story: "ended_all_expired"},
		{name: "404 just after create", bodies: []string{"error", "succeeded"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseSucceeded, story: "received 404"},
		{name: "404 for good", bodies: []string{"error"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
		{name: "rate limited", bodies: []string{"rate_limited", "succeeded"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 3, rate-limited answer 1"},
		{name: "overloaded", bodies: []string{"overloaded", "succeeded"}, jobID: id, start: anthropicStart,
			outcome: pollwarden.PhaseSucceeded, story: "received 529"},
		{name: "in progress past its expiry", bodies: []string{"pending"}, jobID: id, start: time.Date(2024, 9, 25, 19, 0, 0, 0, time.UTC),
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "after the job's reported expiry 2024-09-25T18:37:24Z"},
	})
}
