package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawMCP is a JSON-RPC session on the daemon's /mcp under one token,
// spoken by hand: the Go SDK client has no tasks/* methods.
type rawMCP struct {
	t              *testing.T
	base, token, s string
	id             int
}

func (r *rawMCP) post(method string, params any, notify bool) string {
	r.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !notify {
		r.id++
		msg["id"] = r.id
	}
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest("POST", r.base+"/mcp", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.s != "" {
		req.Header.Set("Mcp-Session-Id", r.s)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		r.s = sid
	}
	body, _ := io.ReadAll(resp.Body)
	// An answer comes as JSON or as one server-sent event.
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return data
		}
	}
	return string(body)
}

// TestServeMCPTasksTenancy: over the daemon's /mcp a task is its
// operation, and another agent's task answers as one that does not exist
// — tasks/get, tasks/result, tasks/list and tasks/cancel alike — and
// cancelling it leaves A's operation waiting.
func TestServeMCPTasksTenancy(t *testing.T) {
	t.Parallel()
	_, base, _ := tenantServe(t)
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"`+opA+`","contract":"proc-test","job_id":"`+jobA+`"}`, 201)
	b := &rawMCP{t: t, base: base, token: tokB}
	b.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tasks": map[string]any{}},
		"clientInfo": map[string]any{"name": "tasks-tenancy", "version": "v0"}}, false)
	b.post("notifications/initialized", map[string]any{}, true)
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		out := b.post(m, map[string]any{"taskId": opA}, false)
		if !strings.Contains(out, `"error"`) || strings.Contains(out, jobA) || strings.Contains(out, `"status"`) {
			t.Errorf("%s on A's task as B: %s", m, out)
		}
	}
	if out := b.post("tasks/list", map[string]any{}, false); strings.Contains(out, opA) || !strings.Contains(out, `"tasks"`) {
		t.Errorf("tasks/list as B: %s", out)
	}
	code, body := send(t, base, tokA, "GET", "/v1/operations/"+opA, "", "")
	var rec struct {
		Phase string `json:"phase"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &rec) != nil || rec.Phase != "waiting" {
		t.Errorf("A's operation after B's tasks/cancel: %d %s", code, body)
	}
	a := &rawMCP{t: t, base: base, token: tokA}
	a.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tasks": map[string]any{}},
		"clientInfo": map[string]any{"name": "tasks-tenancy", "version": "v0"}}, false)
	a.post("notifications/initialized", map[string]any{}, true)
	if out := a.post("tasks/get", map[string]any{"taskId": opA}, false); !strings.Contains(out, `"taskId":"`+opA+`"`) {
		t.Errorf("tasks/get of its own task as A: %s", out)
	}
}

// TestServeMCPTaskCancelIsTheOwners: a scope-all agent sees A's task but
// may not stop it: tasks/cancel over /mcp is refused, as the API's
// abandon is, and A's operation stays waiting; A itself may cancel it.
func TestServeMCPTaskCancelIsTheOwners(t *testing.T) {
	t.Parallel()
	_, base, _ := tenantServe(t)
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"`+opA+`","contract":"proc-test","job_id":"`+jobA+`"}`, 201)
	session := func(token string) *rawMCP {
		m := &rawMCP{t: t, base: base, token: token}
		m.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tasks": map[string]any{}},
			"clientInfo": map[string]any{"name": "tasks-owner", "version": "v0"}}, false)
		m.post("notifications/initialized", map[string]any{}, true)
		return m
	}
	phase := func() string {
		_, body := send(t, base, tokA, "GET", "/v1/operations/"+opA, "", "")
		var rec struct {
			Phase string `json:"phase"`
		}
		_ = json.Unmarshal([]byte(body), &rec)
		return rec.Phase
	}
	ci := session(tokCI)
	if out := ci.post("tasks/get", map[string]any{"taskId": opA}, false); !strings.Contains(out, `"status"`) {
		t.Fatalf("the scope-all agent does not see A's task: %s", out)
	}
	if out := ci.post("tasks/cancel", map[string]any{"taskId": opA}, false); !strings.Contains(out, `"error"`) || !strings.Contains(out, "only its own") {
		t.Errorf("tasks/cancel of A's task by the scope-all agent: %s", out)
	}
	if p := phase(); p != "waiting" {
		t.Errorf("A's operation after the scope-all agent's tasks/cancel: %s", p)
	}
	if out := session(tokA).post("tasks/cancel", map[string]any{"taskId": opA}, false); strings.Contains(out, `"error"`) {
		t.Errorf("A's own tasks/cancel: %s", out)
	}
	if p := phase(); p == "waiting" {
		t.Errorf("A's operation still waiting after A's tasks/cancel")
	}
}
