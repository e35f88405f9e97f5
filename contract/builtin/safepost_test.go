package builtin_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
)

// mcpTasksGet polls a task with a JSON-RPC tasks/get POST declared a
// documented read (safe: true): no call waits for an approver. It is not
// the mcp-task built-in, which also needs the initialize handshake and
// its session id; it shows the body and the states on the MCP spec's own
// bodies, from a server that needs no session.
const mcpTasksGet = `version: 1
name: tasks-get
base_url: %q
status:
  url: "/mcp"
  method: POST
  safe: true
  headers: {Accept: "application/json, text/event-stream"}
  body: {jsonrpc: "2.0", id: 1, method: tasks/get, params: {taskId: "{job_id}"}}
  credential: {header: Authorization, scheme: Bearer, secret: "env:MCP_TOKEN"}
state:
  path: >-
    error.code == ` + "`-32602`" + ` && (contains(error.message, 'expired') && 'task_expired' || 'task_not_found')
    || result.status
  raw: "error.message || result.status"
  pending: [working]
  success: [completed]
  failure: [failed, task_not_found]
  cancelled: [cancelled]
  expired: [task_expired]
result:
  require: [{path: result.taskId, kind: string}]
  error_path: "error || result.statusMessage"
hints:
  poll_after_seconds: {path: result.pollInterval, unit: milliseconds}
backoff: {base: 1s, max: 30s}
limits: {deadline: 1h, max_status_requests: 30, max_transport_failures: 3, max_rate_limited: 3}
`

func TestSafePostStatusCall(t *testing.T) {
	const task = "786512e2-9e0d-44bd-8f29-789f320fe840"
	const body = `{"id":1,"jsonrpc":"2.0","method":"tasks/get","params":{"taskId":"` + task + `"}}`
	mcp := func(sc scenario) scenario {
		sc.contract, sc.jobID, sc.body, sc.path = mcpTasksGet, task, body, "/mcp"
		return sc
	}
	for _, sc := range []scenario{
		mcp(scenario{name: "completed", bodies: []string{"pending", "working_ttl_null", "succeeded"},
			outcome: pollwarden.PhaseSucceeded, result: map[string]any{"result.taskId": task}, story: "state working, next poll 10:20:05 from provider hint"}),
		mcp(scenario{name: "failed", bodies: []string{"failed"}, outcome: pollwarden.PhaseFailed, providerError: "the tool call failed"}),
		mcp(scenario{name: "cancelled", bodies: []string{"cancelled"}, outcome: pollwarden.PhaseCancelled}),
		mcp(scenario{name: "expired task", bodies: []string{"pending", "expired"}, outcome: pollwarden.PhaseExpired,
			providerState: "Failed to retrieve task: Task has expired", story: "state working → task_expired"}),
		mcp(scenario{name: "unknown task", bodies: []string{"error"}, outcome: pollwarden.PhaseFailed, providerError: "Task not found"}),
		mcp(scenario{name: "input required is no state of this contract", bodies: []string{"input_required"},
			outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonUnknownState}),
	} {
		t.Run(sc.name, func(t *testing.T) { replay(t, "mcp-task", sc) })
	}
}
