package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden/cli"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestMain lets the test binary play the pollwarden binary: with
// PW_TEST_BE_MAIN=1 it runs the CLI instead of the tests, so the tests
// drive `pollwarden mcp` as a host would, over a real process's stdio.
func TestMain(m *testing.M) {
	if os.Getenv("PW_TEST_BE_MAIN") == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], cli.OSEnv()))
	}
	os.Exit(m.Run())
}

const canary = "sk-canary-Mcp4Rr8WqZ-stdio"

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type rig struct {
	t       *testing.T
	srv     *fp.Server
	session *sdk.ClientSession
	stderr  *syncBuffer
	dir     string
	// acks receives the resource URIs of each
	// notifications/subscriptions/acknowledged the server sends.
	acks chan []string
	// seen is every tool answer, for the canary check.
	mu   sync.Mutex
	seen []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigWith(t, nil)
}

// newRigWith starts the server with a client configured by opts.
func newRigWith(t *testing.T, opts *sdk.ClientOptions) *rig {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: mcp-test
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:MCP_TEST_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 500ms, max: 1s}
limits: {deadline: 120s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
submit: {url: "%[1]s/jobs", job_id_path: id}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(contracts, "mcp-test.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "mcp", "--store", filepath.Join(dir, "pw.db"), "--contracts", contracts)
	cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1", "MCP_TEST_TOKEN="+canary)
	r := &rig{t: t, srv: srv, stderr: &syncBuffer{}, dir: dir, acks: make(chan []string, 16)}
	cmd.Stderr = r.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	client := sdk.NewClient(&sdk.Implementation{Name: "pollwarden-test", Version: "v0"}, opts)
	// The server sends notifications/subscriptions/acknowledged once it
	// has registered the subscriptions of a subscriptions/listen stream.
	client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.SubscriptionsAcknowledgedParams); ok {
				r.acks <- slices.Clone(p.Notifications.ResourceSubscriptions)
			}
			return next(ctx, method, req)
		}
	})
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, r.stderr.String())
	}
	r.session = session
	t.Cleanup(func() {
		_ = session.Close()
		if strings.Contains(r.stderr.String(), canary) {
			t.Error("the canary secret reached the server's stderr")
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.seen {
			if strings.Contains(s, canary) {
				t.Errorf("the canary secret reached a tool answer: %s", s)
			}
		}
	})
	return r
}

// subscribe subscribes to uri and returns once the server has registered
// the subscription, so a change from then on is notified: at once under
// the legacy protocol, whose resources/subscribe answers after
// registering; under 2026-07-28, where the SDK's Subscribe returns before
// its subscriptions/listen stream is open, on the server's
// acknowledgement of that stream.
func (r *rig) subscribe(ctx context.Context, uri string) {
	r.t.Helper()
	if err := r.session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		r.t.Fatalf("subscribe %s: %v", uri, err)
	}
	if r.session.InitializeResult().ProtocolVersion < "2026-07-28" {
		return
	}
	for {
		select {
		case uris := <-r.acks:
			if slices.Contains(uris, uri) {
				return
			}
		case <-ctx.Done():
			r.t.Fatalf("no subscriptions/acknowledged for %s: %v; stderr: %s", uri, ctx.Err(), r.stderr.String())
		}
	}
}

// call returns the structured answer (or the error text) and isError.
func (r *rig) call(name string, args map[string]any) (map[string]any, string, bool) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		r.t.Fatalf("%s: protocol error %v; stderr: %s", name, err, r.stderr.String())
	}
	raw, _ := json.Marshal(res)
	r.mu.Lock()
	r.seen = append(r.seen, string(raw))
	r.mu.Unlock()
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var m map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &m); err != nil {
			r.t.Fatal(err)
		}
	}
	return m, text.String(), res.IsError
}

func (r *rig) ok(name string, args map[string]any) map[string]any {
	r.t.Helper()
	m, text, isErr := r.call(name, args)
	if isErr || m == nil {
		r.t.Fatalf("%s(%v): error %s", name, args, text)
	}
	return m
}

func (r *rig) toolError(name string, args map[string]any, want ...string) {
	r.t.Helper()
	_, text, isErr := r.call(name, args)
	if !isErr {
		r.t.Fatalf("%s(%v): want a tool error, got %s", name, args, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			r.t.Errorf("%s(%v): error %q does not mention %q", name, args, text, w)
		}
	}
}

// waitUntilSettled calls wait_job until the phase is no longer waiting.
func (r *rig) waitUntilSettled(id string) map[string]any {
	r.t.Helper()
	for range 10 {
		m := r.ok("wait_job", map[string]any{"operation_id": id, "max_wait_seconds": 10})
		if m["phase"] != "waiting" {
			return m
		}
	}
	r.t.Fatalf("operation %s still waiting", id)
	return nil
}

func TestToolsAreListed(t *testing.T) {
	r := newRig(t)
	var names []string
	for tool, err := range r.session.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s lacks a schema or a description", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"get_job", "get_result", "list_jobs", "request_extension", "submit_job", "wait_job", "watch_job"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

func TestWatchThenWaitToSuccess(t *testing.T) {
	r := newRig(t)
	r.srv.Script("ok", fp.State("running", nil), fp.Succeeded("https://files.example.com/report.csv"))
	w := r.ok("watch_job", map[string]any{"contract": "mcp-test", "job_id": "ok"})
	id, _ := w["operation_id"].(string)
	if !strings.HasPrefix(id, "mcp-test-") || w["credential_name"] != "env:MCP_TEST_TOKEN" {
		t.Fatalf("watch_job answer %v", w)
	}
	// The same call resumes the same operation.
	if again := r.ok("watch_job", map[string]any{"contract": "mcp-test", "job_id": "ok"}); again["operation_id"] != id {
		t.Fatalf("repeated watch_job gave %v, want %s", again["operation_id"], id)
	}
	final := r.waitUntilSettled(id)
	if final["phase"] != "succeeded" || final["outcome"] != "succeeded" {
		t.Fatalf("final %v", final)
	}
	res, _ := final["result"].(map[string]any)
	if res["result.url"] != "https://files.example.com/report.csv" {
		t.Fatalf("result %v", final["result"])
	}
	if g := r.ok("get_job", map[string]any{"operation_id": id}); g["phase"] != "succeeded" {
		t.Fatalf("get_job %v", g)
	}
	list := r.ok("list_jobs", map[string]any{"phase": "succeeded"})
	if ops, _ := list["operations"].([]any); len(ops) != 1 {
		t.Fatalf("list_jobs %v", list)
	}
}

func TestBudgetEscalationAndExtensionGrantsNothing(t *testing.T) {
	r := newRig(t)
	r.srv.Script("stuck", fp.State("running", nil))
	w := r.ok("watch_job", map[string]any{"contract": "mcp-test", "job_id": "stuck", "operation_id": "op-stuck", "max_status_requests": 2})
	if w["max_status_requests"] != float64(2) {
		t.Fatalf("watch_job %v", w)
	}
	final := r.waitUntilSettled("op-stuck")
	if final["phase"] != "escalated" || final["reason"] != "request_budget_exhausted" {
		t.Fatalf("final %v", final)
	}
	esc, _ := final["escalation"].(map[string]any)
	if opts, _ := esc["options"].([]any); len(opts) == 0 {
		t.Fatalf("escalation without options: %v", final["escalation"])
	}
	// get_job carries the question's id, which an approver's door takes;
	// no tool decides.
	g := r.ok("get_job", map[string]any{"operation_id": "op-stuck"})
	if ge, _ := g["escalation"].(map[string]any); ge["id"] == nil || ge["id"] == "" || ge["id"] != esc["id"] {
		t.Fatalf("get_job's escalation has no id or another one: %v (wait_job had %v)", g["escalation"], esc["id"])
	}
	// The guidance carries the escalation's message, options once.
	if g, _ := final["guidance"].(string); !strings.Contains(g, "person must decide") || !strings.Contains(g, esc["message"].(string)) ||
		strings.Count(g, "Extend waiting once") != 1 {
		t.Errorf("guidance %q", g)
	}
	if n := r.srv.Count("stuck"); n != 2 {
		t.Errorf("provider saw %d requests, budget 2", n)
	}
	ext := r.ok("request_extension", map[string]any{"operation_id": "op-stuck", "extra_time": "15m",
		"extra_status_requests": 5, "justification": "the export usually takes 20 minutes"})
	if ext["granted"] != false || ext["max_status_requests"] != float64(2) {
		t.Fatalf("request_extension %v", ext)
	}
	if msg, _ := ext["message"].(string); !strings.Contains(msg, "Nothing was granted") {
		t.Errorf("message %q", msg)
	}
	after := r.ok("get_job", map[string]any{"operation_id": "op-stuck"})
	if after["max_status_requests"] != float64(2) || after["phase"] != "escalated" || after["deadline_at"] != final["deadline_at"] {
		t.Fatalf("after request_extension %v", after)
	}
}

func TestToolErrors(t *testing.T) {
	r := newRig(t)
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "job_id": "x", "max_status_requests": 11},
		"max_status_requests", "request_extension")
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "job_id": "x", "deadline": "3h"},
		"deadline", "request_extension")
	r.toolError("watch_job", map[string]any{"contract": "nope", "job_id": "x"}, "unknown contract", "mcp-test")
	// A built-in is found by name (refused here only for its job id).
	r.toolError("watch_job", map[string]any{"contract": "openai-batch", "job_id": ".."}, `job_id: value ".." for {job_id} would change the URL's path`)
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "status_url": "https://evil.example.com/jobs/1"}, "status_url")
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "job_id": "x", "status_url": r.srv.URL() + "/jobs/x"}, "exactly one")
	r.toolError("watch_job", map[string]any{"contract": "mcp-test"}, "exactly one")
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "job_id": "x", "vars": map[string]string{"owner": "acme"}}, `variable "owner"`, "declares no variables")
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "job_id": "x", "bogus": true})
	r.toolError("watch_job", map[string]any{"contract": "mcp-test", "job_id": "x", "max_status_requests": "ten"})
	r.toolError("get_job", map[string]any{"operation_id": "missing"}, "watch_job")
	r.toolError("wait_job", map[string]any{"operation_id": "missing", "max_wait_seconds": 1}, "watch_job")
	r.toolError("wait_job", map[string]any{"operation_id": "x", "max_wait_seconds": 601}, "max_wait_seconds", "600")
	r.toolError("list_jobs", map[string]any{"phase": "done"}, "phase")
	r.toolError("request_extension", map[string]any{"operation_id": "x", "extra_time": "soon", "extra_status_requests": 1, "justification": "j"}, "extra_time")
	// Nothing was created by the refused calls.
	if list := r.ok("list_jobs", nil); len(list["operations"].([]any)) != 0 {
		t.Fatalf("list_jobs after refusals: %v", list)
	}
	if r.srv.Count("x") != 0 {
		t.Fatal("a refused watch_job reached the provider")
	}
}

func TestWaitJobReturnsWaitingWhenTimeRunsOut(t *testing.T) {
	r := newRig(t)
	r.srv.Script("slow", fp.State("running", nil))
	r.ok("watch_job", map[string]any{"contract": "mcp-test", "job_id": "slow", "operation_id": "op-slow"})
	start := time.Now()
	m := r.ok("wait_job", map[string]any{"operation_id": "op-slow", "max_wait_seconds": 2})
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("wait_job took %s with max_wait_seconds 2", took)
	}
	if m["phase"] != "waiting" || m["outcome"] != nil {
		t.Fatalf("wait_job %v", m)
	}
	if g, _ := m["guidance"].(string); !strings.Contains(g, "call wait_job again") || !strings.Contains(g, "next status request") {
		t.Errorf("guidance %q", g)
	}
}
