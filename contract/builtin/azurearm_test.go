package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestReplayAzureARMAsync(t *testing.T) {
	vars := map[string]string{"subscription_id": "00000000-0000-0000-0000-000000000000", "provider_namespace": "Microsoft.Example",
		"location": "westus", "api_version": "2021-07-01-preview"}
	const path = "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Example/locations/westus/operationsStatuses/11111111-1111-1111-1111-111111111111?api-version=2021-07-01-preview"
	op := func(sc scenario) scenario {
		sc.vars, sc.jobID = vars, "11111111-1111-1111-1111-111111111111"
		return sc
	}
	// A Location monitor: 200 when done, body or not.
	const location = "state: {status_codes: {\"202\": Accepted, \"200\": Succeeded, \"204\": Succeeded}}\n"
	runReplays(t, "azure-arm-async", []scenario{
		op(scenario{name: "succeeded", bodies: []string{"pending", "running", "running_in_progress", "succeeded"}, path: path,
			outcome: pollwarden.PhaseSucceeded, story: "state InProgress → Succeeded"}),
		op(scenario{name: "upper case", bodies: []string{"running", "uppercase_succeeded"}, outcome: pollwarden.PhaseSucceeded, story: "state Dequeued → Succeeded"}),
		op(scenario{name: "with properties", bodies: []string{"succeeded_with_properties"}, outcome: pollwarden.PhaseSucceeded, story: "state Succeeded"}),
		op(scenario{name: "failed", bodies: []string{"failed"}, outcome: pollwarden.PhaseFailed, providerError: `"code"`, story: "state Failed"}),
		op(scenario{name: "canceled", bodies: []string{"cancelled"}, outcome: pollwarden.PhaseCancelled, story: "state Canceled"}),
		op(scenario{name: "status read error is not the operation's", bodies: []string{"status_read_error", "succeeded"},
			outcome: pollwarden.PhaseSucceeded, story: "received 500, transport failure 1"}),
		op(scenario{name: "throttled", bodies: []string{"rate_limited", "rate_limited_short", "succeeded"},
			outcome: pollwarden.PhaseSucceeded, story: "received 429, Retry-After 1200, rate-limited answer 1"}),
		op(scenario{name: "location 202 then 204", bodies: []string{"location_running", "location_succeeded_204"},
			outcome: pollwarden.PhaseSucceeded, story: "state Accepted → Succeeded"}),
		op(scenario{name: "location 202 then 200 without body", bodies: []string{"location_running", "location_succeeded"}, extra: location,
			outcome: pollwarden.PhaseSucceeded, story: "state Accepted → Succeeded"}),
	})
}
