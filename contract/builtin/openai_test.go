package builtin_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// openaiStart is the fixtures' created_at (1711471533), so their
// expires_at (created_at + 24h) lies ahead.
var openaiStart = time.Unix(1711471533, 0).UTC()

func TestReplayOpenAIBatch(t *testing.T) {
	const path = "/v1/batches/batch_abc123"
	runReplays(t, "openai-batch", []scenario{
		{name: "succeeded", bodies: []string{"pending", "running", "finalizing", "succeeded"}, jobID: "batch_abc123", start: openaiStart, path: path,
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"output_file_id": "file-cvaTdG"}, story: "state finalizing → completed"},
		{name: "completed without output file", bodies: []string{"running", "completed_without_output_file"}, jobID: "batch_abc123", start: openaiStart,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "success state without a valid result"},
		{name: "failed", bodies: []string{"failed"}, jobID: "batch_abc123", start: openaiStart,
			outcome: pollwarden.PhaseFailed, providerError: "token_limit_exceeded", story: "state failed"},
		{name: "cancelled", bodies: []string{"cancelling", "cancelled"}, jobID: "batch_abc123", start: openaiStart,
			outcome: pollwarden.PhaseCancelled, story: "state cancelling → cancelled"},
		{name: "expired", bodies: []string{"running", "expired"}, jobID: "batch_abc123", start: openaiStart,
			outcome: pollwarden.PhaseExpired, story: "state in_progress → expired"},
		{name: "rate limited then done", bodies: []string{"rate_limited", "succeeded"}, jobID: "batch_abc123", start: openaiStart,
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"output_file_id": "file-cvaTdG"}, story: "received 429, Retry-After 3, rate-limited answer 1"},
		{name: "unknown batch", bodies: []string{"error"}, jobID: "batch_abc123", start: openaiStart,
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
		// expires_at is unix seconds: a batch still in progress an hour
		// after it escalates instead of polling on.
		{name: "pending past its expiry", bodies: []string{"running"}, jobID: "batch_abc123", start: time.Unix(1711557933, 0).Add(time.Hour),
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "after the job's reported expiry 2024-03-27T16:45:33Z"},
	})
}
