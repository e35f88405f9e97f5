package builtin_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

const mcpTaskID = "786512e2-9e0d-44bd-8f29-789f320fe840"

// mcpTaskBody is the tasks/get request every status call must send.
const mcpTaskBody = `{"id":1,"jsonrpc":"2.0","method":"tasks/get","params":{"taskId":"` + mcpTaskID + `"}}`

// The fixtures' own createdAt: a task made at 10:30:00 with a 30 s ttl
// (core) or one hour (extension).
var mcpCreated = time.Date(2025, 11, 25, 10, 30, 0, 0, time.UTC)

// TestReplayMCPTask replays the MCP specification's and the tasks
// extension's own bodies through the built-in, behind the streamable-HTTP
// handshake (initialize, notifications/initialized, Mcp-Session-Id on
// every request, checked by the fake).
func TestReplayMCPTask(t *testing.T) {
	mcp := func(sc scenario) scenario {
		sc.jobID, sc.body, sc.path = mcpTaskID, mcpTaskBody, "/mcp"
		if sc.start.IsZero() {
			sc.start = mcpCreated
		}
		return sc
	}
	runReplaysExcept(t, "mcp-task", []string{"create_task_result", "ext_create_task_result", "tasks_result"}, []scenario{
		// Core wire shape: ttl and pollInterval in milliseconds.
		mcp(scenario{name: "completed", bodies: []string{"pending", "working_ttl_null", "succeeded"},
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"result.taskId": mcpTaskID},
			story: "state working, next poll 10:30:05 from provider hint"}),
		mcp(scenario{name: "still working past createdAt + ttl", bodies: []string{"pending"},
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "after the job's reported expiry 2025-11-25T10:30:30Z"}),
		mcp(scenario{name: "a null ttl never expires", bodies: []string{"working_ttl_null", "succeeded"},
			start: mcpCreated.Add(24 * time.Hour), outcome: pollwarden.PhaseSucceeded}),
		mcp(scenario{name: "input required asks a person at once", bodies: []string{"pending", "input_required"},
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonUnknownState, story: "state working → input_required"}),
		mcp(scenario{name: "failed", bodies: []string{"failed"}, outcome: pollwarden.PhaseFailed, providerError: "the tool call failed"}),
		mcp(scenario{name: "cancelled", bodies: []string{"pending", "cancelled"}, outcome: pollwarden.PhaseCancelled}),
		mcp(scenario{name: "expired task", bodies: []string{"pending", "expired"}, outcome: pollwarden.PhaseExpired,
			providerState: "Failed to retrieve task: Task has expired", story: "state working → task_expired"}),
		mcp(scenario{name: "unknown task", bodies: []string{"error"}, outcome: pollwarden.PhaseFailed,
			providerState: "Failed to retrieve task: Task not found", providerError: "Task not found"}),
		mcp(scenario{name: "rate limited", bodies: []string{"rate_limited", "succeeded"}, outcome: pollwarden.PhaseSucceeded,
			story: "received 429, Retry-After 3"}),
		// Extension wire shape: ttlMs, pollIntervalMs, the result inline.
		mcp(scenario{name: "ext completed", bodies: []string{"ext_pending", "ext_succeeded"}, outcome: pollwarden.PhaseSucceeded,
			result: map[string]any{"result.taskId": mcpTaskID}, story: "state working, next poll 10:30:05 from provider hint"}),
		mcp(scenario{name: "ext tool error reported completed is a failure", bodies: []string{"ext_pending", "ext_completed_is_error"},
			outcome: pollwarden.PhaseFailed, providerState: "completed", providerError: "invalid input", story: "state working → completed_is_error"}),
		mcp(scenario{name: "ext failed", bodies: []string{"ext_failed"}, outcome: pollwarden.PhaseFailed, providerError: "API rate limit exceeded"}),
		mcp(scenario{name: "ext input required", bodies: []string{"ext_input_required"},
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonUnknownState}),
		mcp(scenario{name: "ext cancelled", bodies: []string{"ext_cancelled"}, outcome: pollwarden.PhaseCancelled}),
		mcp(scenario{name: "ext unknown task", bodies: []string{"ext_pending", "ext_error"}, outcome: pollwarden.PhaseFailed,
			story: "state working → task_not_found"}),
		mcp(scenario{name: "ext expired task", bodies: []string{"ext_expired"}, outcome: pollwarden.PhaseExpired}),
		mcp(scenario{name: "ext missing capability is a JSON-RPC failure", bodies: []string{"ext_missing_capability"},
			outcome: pollwarden.PhaseFailed, providerError: "Missing required client capability"}),
	})
}

// TestMCPTaskSubmitAnswers: the built-in's submit finds the task id in
// both create answers, nested (core) and flat (extension).
func TestMCPTaskSubmitAnswers(t *testing.T) {
	ex, err := contract.Builtin("mcp-task")
	if err != nil {
		t.Fatal(err)
	}
	s := ex.Spec().Submit
	for _, name := range []string{"create_task_result", "ext_create_task_result"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "mcp-task", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		job, _, problem := contract.SubmitAnswer(s, http.Header{}.Get, raw)
		if job != mcpTaskID || problem != "" {
			t.Errorf("%s: job %q problem %q, want %s", name, job, problem, mcpTaskID)
		}
	}
	// The core's tasks/result answer is a CallToolResult, not a create
	// answer: no task id, so a plain tools/call answer is refused.
	raw, err := os.ReadFile(filepath.Join("testdata", "mcp-task", "tasks_result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if job, _, problem := contract.SubmitAnswer(s, http.Header{}.Get, raw); job != "" || problem == "" {
		t.Errorf("tasks_result as a create answer: job %q problem %q, want no job", job, problem)
	}
}
