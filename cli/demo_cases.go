package cli

import (
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// demoCase is one job of the tour: how the fake provider answers it, and
// what the reader should learn from it.
type demoCase struct {
	title       string
	job         string
	steps       []fp.Step
	maxRequests int
	// extend: an approver answers the escalation with "extend" and the
	// wait goes on, so the tour shows a decision and what follows it.
	extend bool
}

// demoCases are every outcome a user can meet, in the order of the exit
// code table: the provider's own ends first, then each escalation reason.
func demoCases() []demoCase {
	running := fp.State("running", nil)
	return []demoCase{
		{title: "succeeded: the job ended well and its result was checked", job: "exp_success",
			steps: []fp.Step{fp.State("queued", nil), running, running, fp.Succeeded("https://results.example.com/exp_success.csv")}},
		{title: "Retry-After honoured: the provider said when to come back", job: "exp_retry_after",
			steps: []fp.Step{fp.Code(503, map[string]string{"Retry-After": "2"}), running, fp.Succeeded("https://results.example.com/exp_retry_after.csv")}},
		{title: "failed: the provider reports a failure and its error is kept", job: "exp_failed",
			steps: []fp.Step{running, fp.Failed("the export query ran out of memory")}},
		{title: "cancelled: someone cancelled the job at the provider", job: "exp_cancelled",
			steps: []fp.Step{running, fp.State("cancelled", nil)}},
		{title: "expired: the provider let the job expire", job: "exp_expired",
			steps: []fp.Step{fp.State("expired", nil)}},
		{title: "deadline_exceeded: the provider asks for a wait past the deadline", job: "exp_late",
			steps: []fp.Step{running, fp.Code(429, map[string]string{"Retry-After": "300"})}},
		{title: "request_budget_exhausted, then extended by an approver", job: "exp_slow",
			steps: []fp.Step{running, running, running, running, fp.Succeeded("https://results.example.com/exp_slow.csv")}, maxRequests: 3, extend: true},
		{title: "rate_limited: 429 without Retry-After, three times", job: "exp_throttled",
			steps: []fp.Step{fp.Code(429, nil)}},
		{title: "unknown_state: a state the contract does not list stops", job: "exp_paused",
			steps: []fp.Step{running, fp.State("paused", nil)}},
		{title: "authorization_denied: the credential is refused and not retried", job: "exp_denied",
			steps: []fp.Step{fp.Code(401, nil)}},
		{title: "provider_failure: the gateway keeps failing", job: "exp_flaky",
			steps: []fp.Step{fp.Code(502, nil)}},
		{title: "integration_failure: \"succeeded\" without a valid result URL is not success", job: "exp_no_result",
			steps: []fp.Step{running, fp.Succeeded("exports/exp_no_result.csv")}},
	}
}
