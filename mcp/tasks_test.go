package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// startTaskServer runs `pollwarden mcp` over raw JSON-RPC lines with two
// contracts on one fake provider: task-slow polls every 5 to 10 minutes
// after its first request, task-quick every second.
func startTaskServer(t *testing.T) (*rawServer, *fp.Server) {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, backoff := range map[string]string{"task-slow": "{base: 10m, max: 10m}", "task-quick": "{base: 1s, max: 1s}"} {
		c := fmt.Sprintf(`version: 1
name: %s
status: {url: "%s/jobs/{job_id}"}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: %s
cancel: {url: "%s/jobs/{job_id}/cancel", method: POST}
submit: {url: "%s/jobs", job_id_path: id}
limits: {deadline: 1h, max_status_requests: 20}
`, name, srv.URL(), backoff, srv.URL(), srv.URL())
		if err := os.WriteFile(filepath.Join(contracts, name+".yaml"), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "mcp", "--store", filepath.Join(dir, "pw.db"), "--contracts", contracts)
	cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1")
	r := &rawServer{t: t, stderr: &syncBuffer{}}
	cmd.Stderr = r.stderr
	var err error
	if r.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.out = bufio.NewScanner(stdout)
	r.out.Buffer(make([]byte, 1<<20), 1<<24)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.in.Close(); _ = cmd.Wait() })
	return r, srv
}

// rpcError sends a request that must fail and returns its error object.
func (r *rawServer) rpcError(method string, params any) (code int, message string) {
	r.t.Helper()
	r.nextID++
	r.send(map[string]any{"jsonrpc": "2.0", "id": r.nextID, "method": method, "params": params})
	for r.out.Scan() {
		var m struct {
			ID    *int `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.out.Bytes(), &m); err != nil || m.ID == nil || *m.ID != r.nextID {
			continue
		}
		if m.Error == nil {
			r.t.Fatalf("%s succeeded, want an error: %s", method, r.out.Text())
		}
		return m.Error.Code, m.Error.Message
	}
	r.t.Fatalf("%s: no answer; stderr: %s", method, r.stderr.String())
	return 0, ""
}

type wireTask struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage"`
	TTL            *int64 `json:"ttl"`
	PollInterval   *int64 `json:"pollInterval"`
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs *int64 `json:"pollIntervalMs"`
	ResultType     string `json:"resultType"`
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}

// until re-reads f's task until ok says it moved, at most a minute.
func until(t *testing.T, what string, f func() json.RawMessage, ok func(wireTask) bool) json.RawMessage {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		raw := f()
		if ok(decode[wireTask](t, raw)) {
			return raw
		}
	}
	t.Fatalf("%s: not reached within a minute: %s", what, f())
	return nil
}

// TestTasksCoreShapeConformsToTheSpecification runs watch_job and
// wait_job as 2025-11-25 tasks and validates every task message against
// that version's schema.json; tasks/get is answered from the record and
// sends no provider request; cancelling abandons the wait and sends no
// cancel to the provider.
func TestTasksCoreShapeConformsToTheSpecification(t *testing.T) {
	const v = "2025-11-25"
	r, prov := startTaskServer(t)
	prov.Script("slow", fp.State("running", nil))
	prov.Script("stuck", fp.State("running", nil))
	prov.Script("ok", fp.State("running", nil))
	init := r.call("initialize", map[string]any{"protocolVersion": v, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "tasks-test", "version": "0"}})
	validate(t, specSchema(t, v, "InitializeResult"), "initialize result", init)
	if !strings.Contains(string(init), `"tasks":{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize does not advertise task-augmented tools/call: %s", init)
	}
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	tools := r.call("tools/list", map[string]any{})
	validate(t, specSchema(t, v, "ListToolsResult"), "tools/list result", tools)
	for _, l := range decode[struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}](t, tools).Tools {
		want := l.Name == "watch_job" || l.Name == "submit_job" || l.Name == "wait_job"
		if got := l.Execution != nil && l.Execution.TaskSupport == "optional"; got != want {
			t.Errorf("%s: taskSupport optional is %v, want %v", l.Name, got, want)
		}
	}

	// watch_job as a task: the task is the operation, durable already.
	created := r.call("tools/call", map[string]any{"name": "watch_job", "task": map[string]any{"ttl": 60000},
		"arguments": map[string]any{"contract": "task-slow", "job_id": "slow", "operation_id": "op-slow"}})
	validate(t, specSchema(t, v, "CreateTaskResult"), "CreateTaskResult", created)
	ct := decode[struct{ Task wireTask }](t, created).Task
	if ct.TaskID != "op-slow" || ct.Status != "working" || ct.TTL == nil || ct.PollInterval == nil {
		t.Fatalf("created task: %s", created)
	}
	get := func(id string) func() json.RawMessage {
		return func() json.RawMessage { return r.call("tasks/get", map[string]any{"taskId": id}) }
	}
	// submit_job as a task: sent once, and the task is its operation.
	prov.Script("sub-1", fp.State("running", nil)) // the job the fake provider creates first
	created = r.call("tools/call", map[string]any{"name": "submit_job", "task": map[string]any{"ttl": 60000},
		"arguments": map[string]any{"contract": "task-slow", "body": map[string]any{"q": 1}, "operation_id": "op-sub"}})
	validate(t, specSchema(t, v, "CreateTaskResult"), "CreateTaskResult of submit_job", created)
	if st := decode[struct{ Task wireTask }](t, created).Task; st.TaskID != "op-sub" || st.Status != "working" {
		t.Fatalf("submit_job task: %s", created)
	}
	if prov.Submits() != 1 {
		t.Fatalf("submit_job as a task sent %d submissions, want 1", prov.Submits())
	}

	// After the first status request the next is 5 to 10 minutes away:
	// the poll interval says so, and looking costs the provider nothing.
	for deadline := time.Now().Add(time.Minute); prov.Count("slow") < 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	raw := until(t, "last state recorded", get("op-slow"), func(w wireTask) bool { return strings.Contains(w.StatusMessage, "last state running") })
	validate(t, specSchema(t, v, "GetTaskResult"), "GetTaskResult", raw)
	task := decode[wireTask](t, raw)
	if *task.PollInterval < (4 * time.Minute).Milliseconds() {
		t.Errorf("pollInterval %d ms, want the time to the next status request (5 to 10 minutes)", *task.PollInterval)
	}
	if *task.TTL < time.Hour.Milliseconds() {
		t.Errorf("ttl %d ms, want at least the deadline (1h)", *task.TTL)
	}
	if strings.Contains(strings.ToLower(task.StatusMessage), "poll the provider") || !strings.Contains(task.StatusMessage, "Nothing to do") {
		t.Errorf("statusMessage should tell the agent to do nothing: %q", task.StatusMessage)
	}
	before := prov.Count("slow")
	for range 20 {
		r.call("tasks/get", map[string]any{"taskId": "op-slow"})
	}
	if after := prov.Count("slow"); after != before {
		t.Fatalf("20 tasks/get sent %d provider requests, want none", after-before)
	}

	// An escalation is input_required, with the decision request as its
	// message; tasks/result answers at once, saying a person decides.
	r.call("tools/call", map[string]any{"name": "watch_job", "arguments": map[string]any{
		"contract": "task-quick", "job_id": "stuck", "operation_id": "op-stuck", "max_status_requests": 1}})
	created = r.call("tools/call", map[string]any{"name": "wait_job", "task": map[string]any{},
		"arguments": map[string]any{"operation_id": "op-stuck", "max_wait_seconds": 1}})
	validate(t, specSchema(t, v, "CreateTaskResult"), "CreateTaskResult of wait_job", created)
	raw = until(t, "input_required", get("op-stuck"), func(w wireTask) bool { return w.Status == "input_required" })
	validate(t, specSchema(t, v, "GetTaskResult"), "input_required task", raw)
	task = decode[wireTask](t, raw)
	if !strings.Contains(task.StatusMessage, "request_budget_exhausted") || !strings.Contains(task.StatusMessage, "pollwarden decide op-stuck") {
		t.Errorf("input_required message lacks the decision request: %q", task.StatusMessage)
	}
	res := r.call("tasks/result", map[string]any{"taskId": "op-stuck"})
	validate(t, specSchema(t, v, "CallToolResult"), "tasks/result at input_required", res)
	if !strings.Contains(string(res), `"phase":"escalated"`) || !strings.Contains(string(res), `"io.modelcontextprotocol/related-task":{"taskId":"op-stuck"}`) {
		t.Errorf("tasks/result: %s", res)
	}
	// Cancelling a working task abandons the wait (narrowing): the task
	// is cancelled, pollwarden stops watching, the provider hears nothing.
	slow := decode[wireTask](t, r.call("tasks/cancel", map[string]any{"taskId": "op-slow"}))
	if slow.Status != "cancelled" || !strings.Contains(slow.StatusMessage, "nothing was cancelled at the provider") {
		t.Errorf("cancelling a waiting task: %+v", slow)
	}
	if n := prov.Cancels("slow"); n != 0 {
		t.Errorf("tasks/cancel of a waiting task sent %d cancel requests to the provider, want none", n)
	}
	cancelled := r.call("tasks/cancel", map[string]any{"taskId": "op-stuck"})
	validate(t, specSchema(t, v, "CancelTaskResult"), "CancelTaskResult", cancelled)
	if st := decode[wireTask](t, cancelled).Status; st != "cancelled" {
		t.Errorf("after tasks/cancel the task is %s: %s", st, cancelled)
	}
	if n := prov.Cancels("stuck"); n != 0 {
		t.Errorf("tasks/cancel sent %d cancel requests to the provider, want none", n)
	}
	if code, _ := r.rpcError("tasks/cancel", map[string]any{"taskId": "op-stuck"}); code != -32602 {
		t.Errorf("cancelling a cancelled task answered code %d, want -32602", code)
	}

	// A job that succeeds: completed, and tasks/result is the tool's answer.
	r.call("tools/call", map[string]any{"name": "watch_job", "task": map[string]any{},
		"arguments": map[string]any{"contract": "task-quick", "job_id": "ok", "operation_id": "op-ok"}})
	prov.Script("ok", fp.Succeeded("https://files.example.com/r.csv"))
	until(t, "completed", get("op-ok"), func(w wireTask) bool { return w.Status == "completed" })
	res = r.call("tasks/result", map[string]any{"taskId": "op-ok"})
	validate(t, specSchema(t, v, "CallToolResult"), "tasks/result", res)
	if !strings.Contains(string(res), `"phase":"succeeded"`) {
		t.Errorf("tasks/result: %s", res)
	}
	list := r.call("tasks/list", nil) // params omitted, as the TypeScript SDK sends it
	validate(t, specSchema(t, v, "ListTasksResult"), "ListTasksResult", list)
	for _, id := range []string{"op-slow", "op-stuck", "op-ok"} {
		if !strings.Contains(string(list), `"taskId":"`+id+`"`) {
			t.Errorf("tasks/list lacks %s: %s", id, list)
		}
	}
	if code, _ := r.rpcError("tasks/get", map[string]any{"taskId": "nope"}); code != -32602 {
		t.Errorf("unknown task answered code %d, want -32602", code)
	}
	if code, msg := r.rpcError("tools/call", map[string]any{"name": "get_job", "task": map[string]any{},
		"arguments": map[string]any{"operation_id": "op-ok"}}); code != -32602 || !strings.Contains(msg, "watch_job, submit_job and wait_job") {
		t.Errorf("a task for get_job: %d %q", code, msg)
	}
	// Without a task the tools answer as before.
	plain := r.call("tools/call", map[string]any{"name": "get_job", "arguments": map[string]any{"operation_id": "op-ok"}})
	validate(t, specSchema(t, v, "CallToolResult"), "plain tools/call", plain)
}

// extMeta frames a request as a 2026-07-28 client with the tasks
// extension does (@modelcontextprotocol/ext-tasks 0.2.2).
func extMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
}

// TestTasksExtensionShape checks the io.modelcontextprotocol/tasks shape
// against the extension's wire types: the server decides, a waiting
// operation becomes a task (resultType "task", ttlMs, pollIntervalMs), the
// result is inline once completed, and tasks/update is refused.
func TestTasksExtensionShape(t *testing.T) {
	r, prov := startTaskServer(t)
	prov.Script("ext", fp.State("running", nil))
	// A 2025-11-25 client that declares the extension is answered in its
	// terms too; one that does not sees no extension.
	for _, declared := range []bool{false, true} {
		caps := map[string]any{}
		if declared {
			caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
		}
		s, _ := startTaskServer(t)
		init := s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
			"clientInfo": map[string]any{"name": "tasks-test", "version": "0"}})
		validate(t, specSchema(t, "2025-11-25", "InitializeResult"), "initialize result", init)
		if got := strings.Contains(string(init), `"extensions":{"io.modelcontextprotocol/tasks":{}}`); got != declared {
			t.Errorf("client declares the extension: %v; server advertises it: %v: %s", declared, got, init)
		}
	}
	created := r.call("tools/call", map[string]any{"_meta": extMeta(), "name": "watch_job",
		"arguments": map[string]any{"contract": "task-quick", "job_id": "ext", "operation_id": "op-ext"}})
	ct := decode[wireTask](t, created)
	if ct.ResultType != "task" || ct.TaskID != "op-ext" || ct.Status != "working" || ct.TTLMs == nil || ct.PollIntervalMs == nil || ct.TTL != nil {
		t.Fatalf("CreateTaskResult (extension): %s", created)
	}
	get := func() json.RawMessage {
		return r.call("tasks/get", map[string]any{"_meta": extMeta(), "taskId": "op-ext"})
	}
	raw := get()
	if w := decode[wireTask](t, raw); w.ResultType != "complete" || w.Status != "working" || w.PollIntervalMs == nil {
		t.Fatalf("tasks/get (extension): %s", raw)
	}
	code, msg := r.rpcError("tasks/update", map[string]any{"_meta": extMeta(), "taskId": "op-ext", "inputResponses": map[string]any{}})
	if code != -32602 || !strings.Contains(msg, "pollwarden decide op-ext") {
		t.Errorf("tasks/update: %d %q", code, msg)
	}
	prov.Script("ext", fp.Succeeded("https://files.example.com/e.csv"))
	raw = until(t, "completed", get, func(w wireTask) bool { return w.Status == "completed" })
	var done struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if json.Unmarshal(raw, &done) != nil || done.Result.StructuredContent["phase"] != "succeeded" {
		t.Fatalf("completed task without its result inline: %s", raw)
	}
	// The server decides: an operation that no longer waits is answered
	// at once, as the tool would.
	again := r.call("tools/call", map[string]any{"_meta": extMeta(), "name": "wait_job", "arguments": map[string]any{"operation_id": "op-ext"}})
	if !strings.Contains(string(again), `"structuredContent"`) || !strings.Contains(string(again), `"resultType":"complete"`) {
		t.Errorf("wait_job on a finished operation: %s", again)
	}
}
