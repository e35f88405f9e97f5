package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sensitiveProvider answers "running" to every status GET and counts
// them: the count is what the provider saw, the only proof of how many
// calls an approval let out.
func sensitiveProvider(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/jobs/j-77" || r.Header.Get("Authorization") != "Bearer "+canary {
			http.Error(w, "unexpected request", 400)
			return
		}
		n.Add(1)
		writeState(w, "running")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// sensitiveContract is a GET status call whose credential needs an
// approver's approval for every call.
func sensitiveContract(t *testing.T, dir, base string) string {
	t.Helper()
	c := fmt.Sprintf(`version: 1
name: sensitive
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN", approve_each_call: true}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 100ms, max: 200ms}
limits: {deadline: 2m, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, base)
	p := filepath.Join(dir, "sensitive.yaml")
	if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func approvalQuestion(t *testing.T, op map[string]any, call string) {
	t.Helper()
	esc, _ := op["escalation"].(map[string]any)
	msg, _ := esc["message"].(string)
	opts, _ := esc["options"].([]any)
	first, _ := opts[0].(map[string]any)
	label, _ := first["label"].(string)
	if op["reason"] != "integration_failure" || first["id"] != "approve_call" {
		t.Fatalf("record %v: want an approve_call question", op)
	}
	for _, want := range []string{call, "j-77", "env:PROC_TOKEN"} {
		if !strings.Contains(label, want) || !strings.Contains(msg, want) {
			t.Errorf("the question does not state %q:\nlabel: %s\nmessage: %s", want, label, msg)
		}
	}
}

// TestServeApproveEachCall: under a real serve, a GET whose credential is
// marked approve_each_call is not sent until an approver approves it; the
// agent's approval is refused and sends nothing; one approval lets
// exactly one request out, and the next call asks again.
func TestServeApproveEachCall(t *testing.T) {
	t.Parallel()
	prov, sent := sensitiveProvider(t)
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	sensitiveContract(t, cdir, prov.URL)
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	base := listenAddr(t, p)

	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"sens-1","contract":"sensitive","job_id":"j-77"}`, 201)
	op := waitPhase(t, base, "sens-1", "escalated")
	approvalQuestion(t, op, "request 1 of 10")
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests reached the provider before any approval", n)
	}

	refused := call(t, base, "agent-token", "POST", "/v1/operations/sens-1/decisions", `{"option":"approve_call"}`, 403)
	if msg := fmt.Sprint(refused); !strings.Contains(msg, "approver") {
		t.Errorf("the agent's refusal does not say who may approve: %v", refused)
	}
	if op := call(t, base, "alice-token", "GET", "/v1/operations/sens-1", "", 200); op["phase"] != "escalated" || op["status_requests_used"] != 0.0 {
		t.Fatalf("after the agent's approval: %v, want still escalated with no request used", op)
	}

	call(t, base, "alice-token", "POST", "/v1/operations/sens-1/decisions", `{"option":"approve_call","note":"incident 42"}`, 200)
	waitFor(t, "the approved request and the next question", func() bool {
		op = call(t, base, "alice-token", "GET", "/v1/operations/sens-1", "", 200)
		return op["phase"] == "escalated" && op["status_requests_used"] == 1.0
	})
	approvalQuestion(t, op, "request 2 of 10")
	if n := sent.Load(); n != 1 {
		t.Fatalf("the provider saw %d requests after one approval, want exactly 1", n)
	}
	story := callText(t, base, "/v1/operations/sens-1/audit")
	if !strings.Contains(story, "alice") || !strings.Contains(story, "incident 42") {
		t.Errorf("the approval is not in the story:\n%s", story)
	}
	assertNoCanary(t, dir, p)
}

// TestCLIDecideApprovesOneCall: the same contract from the command line.
// wait stops before the first call (exit 26), decide approves one, and
// the resumed wait sends exactly that one and stops again.
func TestCLIDecideApprovesOneCall(t *testing.T) {
	t.Parallel()
	prov, sent := sensitiveProvider(t)
	dir := t.TempDir()
	cf := sensitiveContract(t, dir, prov.URL)
	store := filepath.Join(dir, "pw.db")
	wait := func() *proc {
		p := start(t, "wait", "--contract", cf, "--job-id", "j-77", "--operation-id", "sens-cli", "--store", store, "--json")
		if code := p.exitCode(t); code != 26 {
			t.Fatalf("wait exit %d, want 26\n%s\n%s", code, p.stdout.String(), p.stderr.String())
		}
		return p
	}
	w1 := wait()
	approvalQuestion(t, outcome(t, w1), "request 1 of 10")
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests sent before an approval", n)
	}
	d := start(t, "decide", "sens-cli", "approve_call", "--contract", cf, "--store", store, "--by", "alice")
	if code := d.exitCode(t); code != 0 {
		t.Fatalf("decide exit %d\n%s", code, d.stderr.String())
	}
	w2 := wait()
	out := outcome(t, w2)
	approvalQuestion(t, out, "request 2 of 10")
	if n := sent.Load(); n != 1 || out["status_requests_used"] != 1.0 {
		t.Fatalf("provider saw %d, record used %v; want exactly one request per approval", n, out["status_requests_used"])
	}
	assertNoCanary(t, dir, w1, d, w2)
}

// TestServeRefusesApproveEachCallForSubmitAndResult: the attack of a
// submission and result fetches sent under a credential marked
// approve_each_call with no approval. A contract that combines the mark
// with submit or result.fetch is refused by serve (exit 2, naming the
// section and its line) and by contract check, so nothing under it can
// reach the provider.
func TestServeRefusesApproveEachCallForSubmitAndResult(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"j-1","state":"succeeded","out":"f1"}`)
	}))
	t.Cleanup(prov.Close)
	for _, tc := range []struct{ name, extra, where string }{
		{"submit", "submit: {url: \"" + prov.URL + "/jobs\", job_id_path: id}\n", "line 7: submit"},
		{"result", "result:\n  require: [{path: out, kind: string}]\n  fetch: {url: \"" + prov.URL + "/files/{out}\", max_bytes: 1000}\n", "line 9: result.fetch"},
	} {
		dir := t.TempDir()
		cdir := filepath.Join(dir, "contracts")
		if err := os.Mkdir(cdir, 0o700); err != nil {
			t.Fatal(err)
		}
		cf := filepath.Join(cdir, "marked.yaml")
		if err := os.WriteFile(cf, []byte(fmt.Sprintf(`version: 1
name: marked
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN", approve_each_call: true}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
%s`, prov.URL, tc.extra)), 0o600); err != nil {
			t.Fatal(err)
		}
		tokens := filepath.Join(dir, "tokens.yaml")
		if err := os.WriteFile(tokens, []byte(fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))), 0o600); err != nil {
			t.Fatal(err)
		}
		p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir, "--tokens", tokens)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
			t.Fatalf("%s: serve started with a contract that sends an approve_each_call credential unapproved\n%s", tc.name, p.stderr.String())
		}
		msg := p.stderr.String()
		if p.cmd.ProcessState.ExitCode() != 2 || !strings.Contains(msg, tc.where) || !strings.Contains(msg, "approve_each_call") {
			t.Fatalf("%s: serve exit %d, %s", tc.name, p.cmd.ProcessState.ExitCode(), msg)
		}
		check := start(t, "contract", "check", cf)
		if code := check.exitCode(t); code == 0 || !strings.Contains(check.stdout.String()+check.stderr.String(), "approve_each_call") {
			t.Fatalf("%s: contract check exit %d: %s %s", tc.name, code, check.stdout.String(), check.stderr.String())
		}
	}
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests reached the provider", n)
	}
}
