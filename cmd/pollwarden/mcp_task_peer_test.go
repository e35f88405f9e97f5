package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestMCPTaskBuiltinAgainstPollwardenServe: the mcp-task built-in's
// second peer is pollwarden's own tasks server. An outer `pollwarden
// submit` sends a task-augmented tools/call watch_job to an inner `serve`
// over /mcp (initialize, the session id, tasks/get), and follows the
// inner operation as a task: to success, and to input_required when the
// inner one escalates.
func TestMCPTaskBuiltinAgainstPollwardenServe(t *testing.T) {
	t.Parallel()
	prov, base, _ := tenantServe(t)
	prov.Script("job-ok", fp.State("running", nil), fp.State("running", nil),
		fp.State("succeeded", map[string]any{"result": map[string]any{"url": "https://files.example.com/r.csv"}}))
	prov.Script("job-odd", fp.State("running", nil), fp.State("paused", nil))
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "inner-token")
	if err := os.WriteFile(tokenFile, []byte(tokA), 0o600); err != nil {
		t.Fatal(err)
	}
	outer := filepath.Join(dir, "outer.yaml")
	if err := os.WriteFile(outer, fmt.Appendf(nil, `version: 1
extends: mcp-task
name: inner-pollwarden
base_url: %q
status:
  credential: {header: Authorization, scheme: Bearer, secret: "file:%s"}
backoff: {base: 100ms, max: 500ms}
limits: {deadline: 1m, max_status_requests: 60, max_transport_failures: 3, max_rate_limited: 3}
`, base, tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	submit := func(inner, job string) (int, map[string]any) {
		body := filepath.Join(dir, inner+".json")
		if err := os.WriteFile(body, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"watch_job",`+
			`"arguments":{"contract":"proc-test","job_id":%q,"operation_id":%q},"task":{"ttl":600000}}}`, job, inner), 0o600); err != nil {
			t.Fatal(err)
		}
		p := start(t, "submit", "--contract", outer, "--body", body, "--operation-id", "outer-"+inner,
			"--store", filepath.Join(dir, "outer.db"), "--json")
		code := p.exitCode(t)
		return code, outcome(t, p)
	}

	code, out := submit("inner-ok", "job-ok")
	if code != 0 || out["provider_job_id"] != "inner-ok" || out["last_state"] != "completed" {
		t.Fatalf("exit %d, outcome %v; want the inner operation followed to completed", code, out)
	}
	inner := call(t, base, tokA, "GET", "/v1/operations/inner-ok", "", 200)
	if inner["phase"] != "succeeded" {
		t.Errorf("the inner operation is %v", inner["phase"])
	}
	// The result is a tasks/result to the inner serve, from a new process
	// (so a new session): pollwarden's tasks are not bound to a session.
	store := filepath.Join(dir, "outer.db")
	res := start(t, "result", "outer-inner-ok", "--contract", outer, "--store", store)
	if code := res.exitCode(t); code != 0 || !strings.Contains(res.stdout.String(), `"io.modelcontextprotocol/related-task":{"taskId":"inner-ok"}`) ||
		!strings.Contains(res.stdout.String(), "files.example.com/r.csv") {
		t.Fatalf("result: exit %d\nstdout %s\nstderr %s", code, res.stdout.String(), res.stderr.String())
	}

	code, out = submit("inner-odd", "job-odd")
	if code != 23 || out["reason"] != "unknown_state" || out["last_state"] != "input_required" {
		t.Fatalf("exit %d, outcome %v; want unknown_state at input_required when the inner operation escalates", code, out)
	}
	if s := fmt.Sprint(out); strings.Contains(s, tokA) {
		t.Fatalf("the inner token reached the outcome: %s", s)
	}
	// Cancelling the outer operation sends tasks/cancel: the inner serve
	// stops watching its escalated operation (closed as failed, nothing
	// cancelled at its own provider) and answers the task cancelled.
	if inner := call(t, base, tokA, "GET", "/v1/operations/inner-odd", "", 200); inner["phase"] != "escalated" {
		t.Fatalf("the inner operation is %v before the cancel, want escalated", inner["phase"])
	}
	dec := start(t, "decide", "outer-inner-odd", "cancel_at_provider", "--contract", outer, "--store", store, "--by", "ann")
	if code := dec.exitCode(t); code != 0 {
		t.Fatalf("decide cancel: exit %d\nstdout %s\nstderr %s", code, dec.stdout.String(), dec.stderr.String())
	}
	if inner := call(t, base, tokA, "GET", "/v1/operations/inner-odd", "", 200); inner["phase"] != "failed" {
		t.Errorf("the inner operation is %v after tasks/cancel, want failed (abandoned)", inner["phase"])
	}
	if !strings.Contains(dec.stdout.String(), "state cancelled") {
		t.Errorf("decide: %s, want the outer operation cancelled by the tasks/cancel answer", dec.stdout.String())
	}
	if s := dec.stdout.String() + dec.stderr.String() + res.stdout.String() + res.stderr.String(); strings.Contains(s, tokA) {
		t.Fatal("the inner token reached the output")
	}
}
