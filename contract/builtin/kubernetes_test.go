package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayKubernetesJob(t *testing.T) {
	runReplays(t, "kubernetes-job", []scenario{
		{name: "complete", bodies: []string{"pending", "running", "condition_false", "suspended", "succeeded"}, jobID: "pi",
			path: "/apis/batch/v1/namespaces/default/jobs/pi", outcome: pollwarden.PhaseSucceeded,
			result: map[string]any{"status.succeeded": 1}, story: "state Suspended → Complete (provider said SuccessCriteriaMet,Complete)"},
		{name: "other namespace", bodies: []string{"succeeded"}, jobID: "pi", vars: map[string]string{"namespace": "batch-jobs"},
			path: "/apis/batch/v1/namespaces/batch-jobs/jobs/pi", outcome: pollwarden.PhaseSucceeded, story: "state Complete"},
		{name: "failure target then failed", bodies: []string{"failure_target_only", "failed"}, jobID: "job-pod-failure-policy-failjob",
			outcome: pollwarden.PhaseFailed, providerError: "PodFailurePolicy", story: "state FailureTarget → Failed"},
		{name: "backoff limit", bodies: []string{"failed_backoff_limit"}, jobID: "pi", outcome: pollwarden.PhaseFailed, providerError: "BackoffLimitExceeded"},
		{name: "deadline exceeded", bodies: []string{"running", "expired"}, jobID: "pi", outcome: pollwarden.PhaseExpired, story: "state Running → DeadlineExceeded"},
		{name: "rate limited", bodies: []string{"rate_limited", "succeeded"}, jobID: "pi", outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 3"},
		{name: "deleted", bodies: []string{"error"}, jobID: "pi", outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
	})
}
