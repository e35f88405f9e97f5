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

// startServe starts the real daemon on a SQLite store with the process
// contract, an agent token and an approver token; it returns the base URL.
func startServe(t *testing.T, srv *fp.Server) string {
	t.Helper()
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return listenAddr(t, p)
}

// rawCall sends body byte for byte (no JSON encoding on the client side
// that could repair it) and returns the status and the error message.
func rawCall(t *testing.T, base, token, method, path string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Error struct{ Message string } }
	_ = json.Unmarshal(b, &e)
	if e.Error.Message == "" {
		return resp.StatusCode, string(b)
	}
	return resp.StatusCode, e.Error.Message
}

// TestServeBoundsEveryLimit: not even an approver registers an operation
// whose budget could overflow (9223372036854775807 plus an extension was
// a negative budget) or whose deadline is a century away; an extension
// that would pass the bound saturates at it.
func TestServeBoundsEveryLimit(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))
	base := startServe(t, srv)

	for _, tc := range []struct{ body, want string }{
		{`{"operation_id":"huge","contract":"proc-test","job_id":"slow","max_status_requests":9223372036854775807}`,
			"max status requests 9223372036854775807 is above 1000000"},
		{`{"operation_id":"huge","contract":"proc-test","job_id":"slow","max_transport_failures":1000001}`,
			"max transport failures 1000001 is above 1000000"},
		{`{"operation_id":"huge","contract":"proc-test","job_id":"slow","deadline":"1000000h"}`,
			"is more than 8784h (a year) from now"},
	} {
		code, msg := rawCall(t, base, "alice-token", "POST", "/v1/operations", []byte(tc.body))
		if code != 422 || !strings.Contains(msg, tc.want) {
			t.Errorf("approver create %s: %d %q, want 422 with %q", tc.body, code, msg, tc.want)
		}
	}
	if code, msg := rawCall(t, base, "alice-token", "GET", "/v1/operations/huge", nil); code != 404 {
		t.Fatalf("a refused create was stored: %d %s", code, msg)
	}

	// At the bound, extending saturates: the option offered and the
	// decision both say 1000000, never more and never negative.
	call(t, base, "alice-token", "POST", "/v1/operations",
		`{"operation_id":"edge","contract":"proc-test","job_id":"slow","max_status_requests":999999,"deadline":"1s"}`, 201)
	var op map[string]any
	waitFor(t, "the operation to escalate at its deadline", func() bool {
		op = call(t, base, "alice-token", "GET", "/v1/operations/edge?wait=5s", "", 200)
		return op["phase"] == "escalated"
	})
	var offered float64
	esc, _ := op["escalation"].(map[string]any)
	opts, _ := esc["options"].([]any)
	for _, o := range opts {
		if m, _ := o.(map[string]any); m["id"] == "extend" {
			offered, _ = m["new_max_status_requests"].(float64)
		}
	}
	if offered != 1000000 {
		t.Fatalf("extend offers a budget of %v, want 1000000: %v", offered, op["escalation"])
	}
	op = call(t, base, "alice-token", "POST", "/v1/operations/edge/decisions", `{"option":"extend"}`, 200)
	if op["max_status_requests"] != float64(1000000) {
		t.Fatalf("after the extension the budget is %v, want 1000000", op["max_status_requests"])
	}
}

// TestServeRefusesIdsThatAreNotUTF8: a body whose strings hold bytes that
// are not UTF-8 (or an escaped half surrogate pair) is refused with 422 naming the field, on the API and on the
// daemon's MCP tools, instead of being registered under an id or job id
// with those bytes replaced by U+FFFD.
func TestServeRefusesIdsThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("run-\uFFFD", fp.State("running", nil))
	base := startServe(t, srv)

	for _, tc := range []struct{ body, field string }{
		{"{\"operation_id\":\"utf8-job\",\"contract\":\"proc-test\",\"job_id\":\"run-\xff\"}", "job_id"},
		{"{\"operation_id\":\"op-\xfe\",\"contract\":\"proc-test\",\"job_id\":\"run-1\"}", "operation_id"},
		{"{\"contract\":\"proc-test\xc3\",\"job_id\":\"run-1\"}", "contract"},
		// Half a surrogate pair, escaped: valid bytes that decode to U+FFFD.
		{`{"operation_id":"utf8-surrogate","contract":"proc-test","job_id":"run-\ud800"}`, "job_id"},
	} {
		code, msg := rawCall(t, base, "agent-token", "POST", "/v1/operations", []byte(tc.body))
		if code != 422 || !strings.Contains(msg, tc.field+" is not valid UTF-8") {
			t.Errorf("create %q: %d %q, want 422 naming %s", tc.body, code, msg, tc.field)
		}
	}
	if code, msg := rawCall(t, base, "alice-token", "GET", "/v1/operations", nil); code != 200 || strings.Contains(msg, "utf8-") {
		t.Fatalf("a refused create was stored: %d %s", code, msg)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "utf8-test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"agent-token", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "watch_job",
		Arguments: json.RawMessage("{\"contract\":\"proc-test\",\"job_id\":\"run-\xff\",\"operation_id\":\"mcp-utf8\"}")})
	if err != nil {
		t.Fatalf("watch_job: %v", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !res.IsError || !strings.Contains(text.String(), "job_id is not valid UTF-8") {
		t.Fatalf("watch_job with a job id that is not UTF-8: error %v, %q", res.IsError, text.String())
	}
	if code, _ := rawCall(t, base, "alice-token", "GET", "/v1/operations/mcp-utf8", nil); code != 404 {
		t.Fatalf("watch_job registered the operation: %d", code)
	}
	if n := srv.Count("run-\uFFFD"); n != 0 {
		t.Fatalf("the provider saw %d requests for the mangled job id", n)
	}
}

// TestWaitRefusesFlagsThatAreNotUTF8: `wait --job-id $'\xff'` exits 2
// naming the flag, before any store is created or request sent.
func TestWaitRefusesFlagsThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("run-\uFFFD", fp.State("succeeded", map[string]any{"result": map[string]any{"url": "https://files.example.com/r"}}))
	dir := t.TempDir()
	c := contractFile(t, dir, srv.URL())
	store := filepath.Join(dir, "pw.db")
	for _, tc := range []struct{ flag, value string }{{"--job-id", "run-\xff"}, {"--operation-id", "op-\xfe"}} {
		args := []string{"wait", "--contract", c, "--job-id", "run-1", "--store", store, "--json", "--quiet"}
		if tc.flag == "--job-id" {
			args[4] = tc.value
		} else {
			args = append(args, tc.flag, tc.value)
		}
		p := start(t, args...)
		if code := p.exitCode(t); code != 2 || !strings.Contains(p.stderr.String(), tc.flag+" is not valid UTF-8") {
			t.Errorf("wait %s %q: exit %d, stderr %q; want 2 naming %s", tc.flag, tc.value, code, p.stderr.String(), tc.flag)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("a refused wait created the store: %v", err)
	}
	if n := srv.Count("run-\uFFFD"); n != 0 {
		t.Errorf("the provider saw %d requests for the mangled job id", n)
	}
}
