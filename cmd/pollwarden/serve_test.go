package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServeEndToEnd runs the real daemon as a process: an agent registers
// a job, long-polls it to an escalation, an approver extends it, the
// scheduler resumes it; a bad contract on SIGHUP keeps the old set; SIGTERM
// stops it cleanly.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { serveEndToEnd(t, func(dir string) string { return filepath.Join(dir, "pw.db") }) })
	t.Run("postgres", func(t *testing.T) { serveEndToEnd(t, func(string) string { return pgStore(t) }) })
}

// pgStore returns a PostgreSQL store URL with a fresh schema, dropped when
// the test ends. Without POLLWARDEN_TEST_PG the test skips, or fails under
// CI=true.
func pgStore(t *testing.T) string {
	t.Helper()
	url := os.Getenv("POLLWARDEN_TEST_PG")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("POLLWARDEN_TEST_PG is not set; CI needs the PostgreSQL tests")
		}
		t.Skip("POLLWARDEN_TEST_PG is not set")
	}
	schema := fmt.Sprintf("pwserve_%d_%d", time.Now().UnixNano(), rand.Uint32())
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "schema=" + schema
}

func serveEndToEnd(t *testing.T, storeFor func(dir string) string) {
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))
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
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", storeFor(dir),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	op := call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"e2e","contract":"proc-test","job_id":"slow","max_status_requests":2}`, 201)
	if op["phase"] != "waiting" {
		t.Fatalf("created: %v", op)
	}
	op = waitPhase(t, base, "e2e", "escalated")
	if op["reason"] != "request_budget_exhausted" || op["status_requests_used"] != float64(2) {
		t.Fatalf("escalation: %v", op)
	}
	call(t, base, "agent-token", "POST", "/v1/operations/e2e/decisions", `{"option":"extend"}`, 403)
	op = call(t, base, "alice-token", "POST", "/v1/operations/e2e/decisions", `{"option":"extend","note":"export matters"}`, 200)
	if op["phase"] != "waiting" || op["max_status_requests"] != float64(6) {
		t.Fatalf("after extend: %v", op)
	}
	op = waitPhase(t, base, "e2e", "escalated")
	if op["status_requests_used"] != float64(6) || srv.Count("slow") != 6 || srv.MaxInFlight("slow") != 1 {
		t.Fatalf("after the extension: %v; provider saw %d", op, srv.Count("slow"))
	}

	// A broken contract on SIGHUP keeps the old set.
	if err := os.WriteFile(filepath.Join(cdir, "broken.yaml"), []byte("version: 1\nname: Broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload to be reported", func() bool { return strings.Contains(p.stderr.String(), "reload refused") })
	call(t, base, "agent-token", "POST", "/v1/operations", `{"contract":"proc-test","job_id":"slow2","max_status_requests":1}`, 201)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM: %s", code, p.stderr.String())
	}
	assertNoCanary(t, dir, p)
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// listenAddr reads the address serve prints once it listens.
func listenAddr(t *testing.T, p *proc) string {
	t.Helper()
	var addr string
	waitFor(t, "serve to listen", func() bool {
		sc := bufio.NewScanner(bytes.NewReader(p.stdout.Bytes()))
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "listening on "); ok {
				addr = a
				return true
			}
		}
		return false
	})
	return addr
}

func call(t *testing.T, base, token, method, path, body string, want int) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func waitPhase(t *testing.T, base, id, phase string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	// A long-poll holds its answer until the phase changes, so it is asked
	// only when a plain read shows another phase: held on an operation
	// already escalated, it would answer after its full 5 s.
	op := call(t, base, "agent-token", "GET", "/v1/operations/"+id, "", 200)
	for time.Now().Before(deadline) {
		if op["phase"] == phase {
			return op
		}
		op = call(t, base, "agent-token", "GET", "/v1/operations/"+id+"?wait=5s", "", 200)
	}
	t.Fatalf("operation %s never reached %s", id, phase)
	return nil
}

// bearer adds a token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestServeMCPOverHTTP drives /mcp on the real daemon with the official
// SDK client: the tools as on stdio, an operation's resource with a
// subscription notified on a phase change, the bearer tokens, and a clean
// stop with a session still open. The secret reaches no answer.
func TestServeMCPOverHTTP(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("ok", fp.State("running", nil), fp.Succeeded("https://files.example.com/r.csv"))
	srv.Script("gated", fp.State("running", nil))
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
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	// Without a token, with an unknown one: 401 with the API's JSON error.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	for _, token := range []string{"", "not-a-token"} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error struct{ Code string } }
		if resp.StatusCode != 401 || json.Unmarshal(b, &e) != nil || e.Error.Code != "unauthorized" {
			t.Fatalf("token %q: %d %s", token, resp.StatusCode, b)
		}
	}
	// Other paths keep the API's answers.
	call(t, base, "agent-token", "GET", "/mcpx", "", 404)
	call(t, base, "agent-token", "DELETE", "/v1/operations", "", 405)

	var seen []string
	var mu sync.Mutex
	updated := make(chan string, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "serve-test", Version: "v0"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
	})
	acks := acknowledgements(client)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"agent-token", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, p.stderr.String())
	}
	defer session.Close()
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(res)
		mu.Lock()
		seen = append(seen, string(raw))
		mu.Unlock()
		if res.IsError {
			t.Fatalf("%s: %s", name, raw)
		}
		var m map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &m)
		return m
	}

	var names []string
	for tl, err := range session.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"get_job", "get_result", "list_jobs", "request_extension", "submit_job", "wait_job", "watch_job"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	w := tool("watch_job", map[string]any{"contract": "proc-test", "job_id": "ok", "operation_id": "mcp-ok"})
	if w["operation_id"] != "mcp-ok" || w["credential_name"] != "env:PROC_TOKEN" {
		t.Fatalf("watch_job %v", w)
	}
	var final map[string]any
	for range 10 {
		final = tool("wait_job", map[string]any{"operation_id": "mcp-ok", "max_wait_seconds": 10})
		if final["phase"] != "waiting" {
			break
		}
	}
	if final["phase"] != "succeeded" || final["result"].(map[string]any)["result.url"] != "https://files.example.com/r.csv" {
		t.Fatalf("wait_job %v", final)
	}

	// The operation as a resource: subscribe while it waits, let the
	// provider finish, get notified, read the outcome.
	tool("watch_job", map[string]any{"contract": "proc-test", "job_id": "gated", "operation_id": "mcp-gated"})
	uri := "pollwarden://operations/mcp-gated"
	subscribe(ctx, t, session, acks, uri)
	srv.Script("gated", fp.Succeeded("https://files.example.com/g.csv"))
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("notified about %s, want %s", got, uri)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/resources/updated after the phase changed")
	}
	rr, err := session.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/json" {
		t.Fatalf("read %v", rr.Contents)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &out); err != nil || out["phase"] != "succeeded" || out["operation_id"] != "mcp-gated" {
		t.Fatalf("resource %s: %v", rr.Contents[0].Text, err)
	}
	mu.Lock()
	seen = append(seen, rr.Contents[0].Text)
	for _, s := range seen {
		if strings.Contains(s, canary) {
			t.Errorf("the canary secret reached an MCP answer: %s", s)
		}
	}
	mu.Unlock()

	// SIGTERM with the session (and its streams) still open stops cleanly.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- p.exitCode(t) }()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d after SIGTERM: %s", code, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20 s of SIGTERM with an MCP session open")
	}
	assertNoCanary(t, dir, p)
}
