package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayGitHubActionsRun(t *testing.T) {
	vars := map[string]string{"owner": "octocat", "repo": "Hello-World"}
	const path = "/repos/octocat/Hello-World/actions/runs/30433642"
	run := func(sc scenario) scenario { sc.vars, sc.jobID = vars, "30433642"; return sc }
	runReplays(t, "github-actions-run", []scenario{
		run(scenario{name: "success", bodies: []string{"pending", "waiting", "running", "succeeded"}, path: path,
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"conclusion": "success"}, story: "state in_progress → success (provider said completed/success)"}),
		run(scenario{name: "null conclusion", bodies: []string{"running", "completed_null_conclusion"},
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonUnknownState, story: "state in_progress → completed_null_conclusion (provider said completed/null)"}),
		run(scenario{name: "failure", bodies: []string{"failed"}, outcome: pollwarden.PhaseFailed, story: "state failure"}),
		run(scenario{name: "the story names the repository", bodies: []string{"succeeded"}, outcome: pollwarden.PhaseSucceeded, story: "started watching job 30433642, deadline 16:20:00, budget 150 (max transport failures 3, max rate-limited answers 3; owner=octocat, repo=Hello-World)"}),
		run(scenario{name: "startup failure", bodies: []string{"startup_failure"}, outcome: pollwarden.PhaseFailed, story: "state startup_failure"}),
		run(scenario{name: "action required", bodies: []string{"action_required"}, outcome: pollwarden.PhaseFailed, story: "state action_required"}),
		run(scenario{name: "cancelled", bodies: []string{"running", "cancelled"}, outcome: pollwarden.PhaseCancelled, story: "state in_progress → cancelled"}),
		run(scenario{name: "timed out", bodies: []string{"timed_out"}, outcome: pollwarden.PhaseExpired, story: "state timed_out"}),
		run(scenario{name: "not found", bodies: []string{"error"}, outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"}),
		run(scenario{name: "forbidden", bodies: []string{"forbidden"}, outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonAuthorizationDenied, story: "received 403"}),
		run(scenario{name: "429 primary rate limit", bodies: []string{"rate_limited_429", "succeeded"}, outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 0, rate-limited answer 1"}),
		// GitHub's primary rate limit is a 403 with x-ratelimit-remaining 0
		// and x-ratelimit-reset in unix seconds; a secondary one a 403 with
		// retry-after. Both are rate limits, not a refused token.
		run(scenario{name: "403 primary rate limit", bodies: []string{"rate_limited", "succeeded"}, outcome: pollwarden.PhaseSucceeded,
			story: "received 403, Retry-After 0, rate-limited answer 1"}),
		run(scenario{name: "403 secondary rate limit", bodies: []string{"secondary_rate_limited", "succeeded"}, outcome: pollwarden.PhaseSucceeded,
			story: "received 403, Retry-After 3, rate-limited answer 1"}),
		run(scenario{name: "403 rate limits until the budget", bodies: []string{"rate_limited"}, outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonRateLimited,
			story: "3 of 3 answers were rate limits (last: 403 with x-ratelimit-remaining 0)"}),
		// A 304 answering If-None-Match is the job unchanged: pending.
		run(scenario{name: "304 is unchanged", bodies: []string{"running_etag", "not_modified", "succeeded"}, outcome: pollwarden.PhaseSucceeded, story: "received 304"}),
		// A 304 with no ETag ever sent is an answer pollwarden did not ask for.
		run(scenario{name: "unasked 304", bodies: []string{"not_modified"}, outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 304"}),
	})
}

// The last ETag goes back as If-None-Match, and a 304 keeps the job
// pending with its previous state, counted as a request, not a failure.
func TestGitHubConditionalRequest(t *testing.T) {
	sc := scenario{name: "etag", bodies: []string{"running_etag", "not_modified", "succeeded"},
		vars: map[string]string{"owner": "octocat", "repo": "Hello-World"}, jobID: "30433642", outcome: pollwarden.PhaseSucceeded}
	op, fake := replay(t, "github-actions-run", sc)
	if len(fake.requests) != 3 {
		t.Fatalf("%d requests, want 3", len(fake.requests))
	}
	if got := fake.requests[0].Header.Get("If-None-Match"); got != "" {
		t.Errorf("first request sent If-None-Match %q, want none", got)
	}
	for i := 1; i < 3; i++ {
		if got := fake.requests[i].Header.Get("If-None-Match"); got != `"PLACEHOLDER-etag"` {
			t.Errorf("request %d sent If-None-Match %q, want the last ETag", i+1, got)
		}
	}
	if op.TransportFailuresUsed != 0 || op.StatusRequestsUsed != 3 {
		t.Errorf("transport failures %d, requests %d; want 0 and 3", op.TransportFailuresUsed, op.StatusRequestsUsed)
	}
}
