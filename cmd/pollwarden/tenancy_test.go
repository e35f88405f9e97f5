package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// The tokens of TestServeTenancy: two agents, an agent whose entry says
// scope: all, and an approver.
const (
	tokA   = "agent-a-token"
	tokB   = "agent-b-token"
	tokCI  = "ci-token"
	tokApp = "alice-token"
	// jobA is the provider job of A's operation: the one field of A's
	// record that nothing B sends contains, so finding it in an answer to
	// B proves a leak.
	jobA = "job-of-a-7f3q"
	opA  = "a-private-op"
)

// tenantServe starts a real serve with the four tokens and returns its
// base URL.
func tenantServe(t *testing.T) (*fp.Server, string, *proc) {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	srv.Script(jobA, fp.State("running", nil))
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, srv.URL())
	tokens := fmt.Sprintf(`tokens:
  - {name: build-agent, role: agent, sha256: %q}
  - {name: rival-agent, role: agent, sha256: %q}
  - {name: ci, role: agent, sha256: %q, scope: all}
  - {name: alice, role: approver, sha256: %q}
`, sum(tokA), sum(tokB), sum(tokCI), sum(tokApp))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return srv, listenAddr(t, p), p
}

// send is one API request; it returns the status and the body as text.
func send(t *testing.T, base, token, method, path, body, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func listIDs(t *testing.T, base, token string) []string {
	t.Helper()
	code, body := send(t, base, token, "GET", "/v1/operations?limit=1000", "", "")
	if code != 200 {
		t.Fatalf("list as %s: %d %s", token, code, body)
	}
	var l struct {
		Operations []struct {
			OperationID string `json:"operation_id"`
		}
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, op := range l.Operations {
		ids = append(ids, op.OperationID)
	}
	return ids
}

// TestServeTenancy performs, against a real daemon, what an agent token
// could do to another agent's operation: list it, read it, long-poll it,
// read its audit, ask for an extension on it, and create over its id.
// Each answer to B must be the answer for an id that does not exist (the
// id B sent aside), with nothing of A's record in it; a scope-all agent
// and the approver see A's operation, and A's audit shows nothing B did.
func TestServeTenancy(t *testing.T) {
	t.Parallel()
	_, base, p := tenantServe(t)
	createA := `{"operation_id":"` + opA + `","contract":"proc-test","job_id":"` + jobA + `"}`
	call(t, base, tokA, "POST", "/v1/operations", createA, 201)
	call(t, base, tokB, "POST", "/v1/operations", `{"operation_id":"b-own","contract":"proc-test","job_id":"job-of-b"}`, 201)

	noLeak := func(what, body string) {
		t.Helper()
		for _, field := range []string{jobA, "status_requests_used", "deadline_at", "phase"} {
			if strings.Contains(body, field) {
				t.Errorf("%s: B's answer holds %q of A's record: %s", what, field, body)
			}
		}
	}
	// B's answer about A's operation must be, word for word, its answer
	// about an operation that does not exist.
	likeMissing := func(what, method, path, body, accept string) {
		t.Helper()
		code, got := send(t, base, tokB, method, strings.ReplaceAll(path, "{id}", opA), body, accept)
		wantCode, want := send(t, base, tokB, method, strings.ReplaceAll(path, "{id}", "no-such-op"), body, accept)
		if code != wantCode || strings.ReplaceAll(got, opA, "no-such-op") != want {
			t.Errorf("%s: B got %d %s; for a missing operation %d %s", what, code, got, wantCode, want)
		}
		if code != 404 {
			t.Errorf("%s: B got %d, want 404", what, code)
		}
		noLeak(what, got)
	}

	if ids := listIDs(t, base, tokB); strings.Join(ids, ",") != "b-own" {
		t.Errorf("B lists %v, want only its own b-own", ids)
	}
	likeMissing("GET", "GET", "/v1/operations/{id}", "", "")
	likeMissing("long-poll", "GET", "/v1/operations/{id}?wait=30s", "", "")
	likeMissing("audit as text", "GET", "/v1/operations/{id}/audit", "", "")
	likeMissing("audit as JSON", "GET", "/v1/operations/{id}/audit", "", "application/json")
	likeMissing("extension request", "POST", "/v1/operations/{id}/extension-requests",
		`{"extra_time":"10m","extra_status_requests":5,"justification":"B wants A's budget"}`, "")

	// Create over A's id: the same body (which would answer A's record as
	// a retry) and another body (whose 409 named A's contract and job).
	for _, body := range []string{createA, `{"operation_id":"` + opA + `","contract":"proc-test","job_id":"job-of-b-2"}`} {
		code, got := send(t, base, tokB, "POST", "/v1/operations", body, "")
		if code != 409 || !strings.Contains(got, "already in use") {
			t.Errorf("create over A's id %s: %d %s, want 409 already in use", body, code, got)
		}
		noLeak("create over A's id", got)
	}

	// A, the scope-all agent and the approver see A's operation.
	for _, tok := range []string{tokA, tokCI, tokApp} {
		if op := call(t, base, tok, "GET", "/v1/operations/"+opA, "", 200); op["provider_job_id"] != jobA {
			t.Errorf("%s reads %v", tok, op)
		}
		call(t, base, tok, "GET", "/v1/operations/"+opA+"/audit", "", 200)
	}
	for _, tok := range []string{tokCI, tokApp} {
		if ids := strings.Join(listIDs(t, base, tok), ","); ids != "b-own,"+opA {
			t.Errorf("%s lists %s, want both operations", tok, ids)
		}
	}
	if ids := strings.Join(listIDs(t, base, tokA), ","); ids != opA {
		t.Errorf("A lists %s, want only its own", ids)
	}
	// The scope-all agent retrying A's exact body gets A's record, as a
	// retry would: it sees it anyway.
	if op := call(t, base, tokCI, "POST", "/v1/operations", createA, 200); op["operation_id"] != opA {
		t.Errorf("scope-all create with A's body: %v", op)
	}

	// Nothing B did reached A's operation, and its story names its creator.
	_, story := send(t, base, tokApp, "GET", "/v1/operations/"+opA+"/audit", "", "")
	if strings.Contains(story, "rival-agent") || strings.Contains(story, "asked for more") {
		t.Errorf("A's audit shows B's attempts:\n%s", story)
	}
	if !strings.Contains(story, "by build-agent (agent)") {
		t.Errorf("A's audit does not name its creator:\n%s", story)
	}
	if strings.Contains(p.stderr.String(), tokB) {
		t.Error("a token reached the log")
	}
}

// TestServeMCPTenancy is the same attack over the daemon's /mcp with B's
// token, with the project's SDK client: the tools, the resources and
// their subscriptions do not reveal A's operation; the audit names the
// token that acted over MCP, not a shared mcp-agent.
func TestServeMCPTenancy(t *testing.T) {
	t.Parallel()
	srv, base, _ := tenantServe(t)
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"`+opA+`","contract":"proc-test","job_id":"`+jobA+`"}`, 201)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	connect := func(token, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
		t.Helper()
		if opts == nil {
			opts = &sdk.ClientOptions{}
		}
		client := sdk.NewClient(&sdk.Implementation{Name: "tenancy-test", Version: "v0"}, opts)
		s, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	tool := func(s *sdk.ClientSession, name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(res)
		return string(raw), res.IsError
	}
	noLeak := func(what, answer string) {
		t.Helper()
		if strings.Contains(answer, jobA) || strings.Contains(answer, `"phase"`) {
			t.Errorf("%s: B's answer holds A's record: %s", what, answer)
		}
	}

	updated := make(chan string, 16)
	b := connect(tokB, "2025-06-18", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	uriA := "pollwarden://operations/" + opA

	out, isErr := tool(b, "list_jobs", nil)
	if isErr || strings.Contains(out, opA) {
		t.Errorf("list_jobs as B: %s", out)
	}
	for _, name := range []string{"get_job", "wait_job"} {
		args := map[string]any{"operation_id": opA}
		if name == "wait_job" {
			args["max_wait_seconds"] = 30
		}
		out, isErr := tool(b, name, args)
		if !isErr || !strings.Contains(out, "no operation") {
			t.Errorf("%s on A's operation as B: %s", name, out)
		}
		noLeak(name, out)
	}
	out, isErr = tool(b, "request_extension", map[string]any{"operation_id": opA, "extra_time": "10m",
		"extra_status_requests": 5, "justification": "B wants A's budget"})
	if !isErr || !strings.Contains(out, "no operation") {
		t.Errorf("request_extension on A's operation as B: %s", out)
	}
	noLeak("request_extension", out)
	out, isErr = tool(b, "watch_job", map[string]any{"contract": "proc-test", "job_id": jobA, "operation_id": opA})
	if !isErr || !strings.Contains(out, "already in use") {
		t.Errorf("watch_job over A's id as B: %s", out)
	}
	noLeak("watch_job over A's id", out)

	for r, err := range b.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.URI, opA) {
			t.Errorf("resources/list shows B %s", r.URI)
		}
	}
	if rr, err := b.ReadResource(ctx, &sdk.ReadResourceParams{URI: uriA}); err == nil {
		t.Errorf("resources/read of A's operation as B: %v", rr.Contents[0].Text)
	} else {
		noLeak("resources/read", err.Error())
	}
	// Under the legacy protocol and the newest the daemon speaks.
	for _, s := range []*sdk.ClientSession{b, connect(tokB, "", nil)} {
		if err := s.Subscribe(ctx, &sdk.SubscribeParams{URI: uriA}); err == nil {
			t.Errorf("B subscribed to A's operation (protocol %s)", s.InitializeResult().ProtocolVersion)
		} else {
			noLeak("resources/subscribe", err.Error())
		}
	}

	// B's own job over MCP: the record and the audit name B's token. Slow
	// answers keep it waiting (ten of them take seconds) until it is told
	// to succeed.
	srv.Script("job-of-b", fp.Step{JSON: map[string]any{"state": "running"}, Delay: 500 * time.Millisecond})
	out, isErr = tool(b, "watch_job", map[string]any{"contract": "proc-test", "job_id": "job-of-b"})
	if isErr {
		t.Fatalf("watch_job as B: %s", out)
	}
	var own struct {
		StructuredContent struct {
			OperationID string `json:"operation_id"`
		} `json:"structuredContent"`
	}
	_ = json.Unmarshal([]byte(out), &own)
	idB := own.StructuredContent.OperationID
	if out, isErr := tool(b, "request_extension", map[string]any{"operation_id": idB, "extra_time": "10m",
		"extra_status_requests": 5, "justification": "the export is large"}); isErr {
		t.Fatalf("request_extension on its own operation: %s", out)
	}
	// Subscribed to its own operation, B is notified of its change, and
	// of nothing of A's, which finishes too.
	if err := b.Subscribe(ctx, &sdk.SubscribeParams{URI: "pollwarden://operations/" + idB}); err != nil {
		t.Fatal(err)
	}
	srv.Script(jobA, fp.Succeeded("https://files.example.com/a.csv"))
	srv.Script("job-of-b", fp.Succeeded("https://files.example.com/b.csv"))
	select {
	case got := <-updated:
		if got != "pollwarden://operations/"+idB {
			t.Errorf("B was notified about %s", got)
		}
	case <-ctx.Done():
		t.Fatal("B was not notified about its own operation")
	}

	_, story := send(t, base, tokB, "GET", "/v1/operations/"+idB+"/audit", "", "")
	if strings.Contains(story, "mcp-agent") || !strings.Contains(story, "by rival-agent (agent)") ||
		!strings.Contains(story, "rival-agent (agent) asked for more") {
		t.Errorf("the audit of B's MCP operation does not name B's token:\n%s", story)
	}
	// Two agents watching one provider job each get their own operation.
	a := connect(tokA, "", nil)
	out, isErr = tool(a, "watch_job", map[string]any{"contract": "proc-test", "job_id": "job-of-b"})
	if isErr || strings.Contains(out, idB) {
		t.Errorf("watch_job of the same job as A: %s (B's is %s)", out, idB)
	}

	// The approver's session sees A's operation among all.
	app := connect(tokApp, "", nil)
	if out, _ := tool(app, "list_jobs", nil); !strings.Contains(out, opA) || !strings.Contains(out, idB) {
		t.Errorf("list_jobs as the approver: %s", out)
	}
	if rr, err := app.ReadResource(ctx, &sdk.ReadResourceParams{URI: uriA}); err != nil || !strings.Contains(rr.Contents[0].Text, jobA) {
		t.Errorf("resources/read as the approver: %v", err)
	}
}
