// Package tsclient_test drives pollwarden's MCP server with the clients
// most hosts are built on: the official TypeScript SDK (e2e.mjs) and the
// MCP Inspector's CLI. The Go SDK tests elsewhere use the same library on
// both ends, so they cannot see what another implementation refuses.
package tsclient_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

const (
	canary       = "sk-canary-Ts7Hq3Vn-typescript"
	contractName = "tsc-test"
	agentToken   = "ts-agent-token"
	reportURL    = "https://files.example.com/report.csv"
)

// requireNode skips the test when the npm packages are not installed, or
// fails it under CI=true, where .ci/run installs them.
func requireNode(t *testing.T) {
	t.Helper()
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	}
	for _, p := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector"} {
		if _, err := os.Stat(filepath.Join("node_modules", p, "package.json")); err != nil && missing == "" {
			missing = "node_modules lacks " + p + ": run `npm ci --no-audit --no-fund` in mcp/tsclient"
		}
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(missing + " (CI needs the TypeScript client suite)")
	}
	t.Skip(missing)
}

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

// rig is one pollwarden binary, a fake provider that requires the canary
// as its credential, a contract for it and a tokens file.
type rig struct {
	t         *testing.T
	bin, dir  string
	contracts string
	srv       *fp.Server
}

// binary is the pollwarden binary every test of the package shares: it is
// built once, by the first test that needs it, into TestMain's directory.
var binary struct {
	dir  string
	once sync.Once
	err  error
}

// clientParallel is how many of the package's tests run at once unless
// -parallel is given: they wait on node, the daemon and the provider far
// more than they compute, so two (GOMAXPROCS on a 2-core machine) would
// leave the machine idle.
const clientParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(clientParallel, runtime.GOMAXPROCS(0))))
	}
	dir, err := os.MkdirTemp("", "pollwarden-tsclient-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildPollwarden builds the binary the clients start or connect to, once
// for the package.
func buildPollwarden(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binary.dir, "pollwarden")
	binary.once.Do(func() {
		build := exec.Command("go", "build", "-o", bin, "github.com/pollwarden/pollwarden/cmd/pollwarden")
		if out, err := build.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return bin
}

func newRig(t *testing.T, bin string) *rig {
	t.Helper()
	dir := t.TempDir()
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	srv.Script("ok", fp.State("running", nil))
	srv.Script("stuck", fp.State("running", nil))
	srv.Script("gated", fp.State("running", nil))
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: %s
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:MCP_TEST_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 200ms, max: 200ms}
limits: {deadline: 300s, max_status_requests: 100, max_transport_failures: 3, max_rate_limited: 3}
`, contractName, srv.URL())
	if err := os.WriteFile(filepath.Join(contracts, contractName+".yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(agentToken))
	tokens := fmt.Sprintf("tokens:\n  - {name: ts-agent, role: agent, sha256: %q}\n", hex.EncodeToString(sum[:]))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, bin: bin, dir: dir, contracts: contracts, srv: srv}
}

// report is e2e.mjs's last line.
type report struct {
	OK              bool     `json:"ok"`
	Error           string   `json:"error"`
	ProtocolVersion string   `json:"protocolVersion"`
	Checks          []string `json:"checks"`
}

// wantChecks are the steps e2e.mjs must have passed, so a script that
// stops early or skips a step cannot pass for a green run.
func wantChecks() []string {
	return []string{
		"initialize", "tools/list",
		"schemas get_job", "schemas list_jobs", "schemas request_extension", "schemas wait_job", "schemas watch_job",
		"resources/templates/list", "resources/list",
		"watch_job", "watch_job resumes", "progress on wait_job", "wait_job", "get_job",
		"escalated", "request_extension", "extension offered as asked", "list_jobs", "list_jobs phase",
		"resources/updated", "resources/read",
		"error watch_job contract,job_id,max_status_requests", "error watch_job contract,job_id", "error watch_job contract",
		"error get_job operation_id", "error wait_job operation_id,max_wait_seconds", "error list_jobs phase",
		"error request_extension operation_id,extra_time,extra_status_requests,justification",
		"canary",
	}
}

// runE2E runs e2e.mjs with env and plays the provider when it asks: on
// "progress" and "subscribed" the named job succeeds. It returns the
// script's report and everything it printed, with every MCP message it
// received.
func (r *rig) runE2E(env ...string) (report, string) {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	logFile := filepath.Join(r.dir, "received.jsonl")
	cmd := exec.CommandContext(ctx, "node", "e2e.mjs")
	cmd.Env = append(os.Environ(), append(env, "PW_CONTRACT="+contractName, "PW_CANARY="+canary, "PW_LOG="+logFile)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	var last string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		printed.WriteString(line + "\n")
		last = line
		var step struct {
			Await string `json:"await"`
			JobID string `json:"job_id"`
		}
		if json.Unmarshal([]byte(line), &step) != nil || step.Await == "" {
			continue
		}
		switch step.Await {
		case "progress", "subscribed":
			r.srv.Script(step.JobID, fp.Succeeded(reportURL))
		default:
			t.Errorf("e2e.mjs asked for an unknown step %q", step.Await)
		}
		if _, err := io.WriteString(stdin, "ok\n"); err != nil {
			t.Fatal(err)
		}
	}
	_ = stdin.Close()
	waitErr := cmd.Wait()
	received, _ := os.ReadFile(logFile)
	all := printed.String() + stderr.String() + string(received)
	var rep report
	if err := json.Unmarshal([]byte(last), &rep); err != nil || !rep.OK || waitErr != nil {
		t.Fatalf("e2e.mjs: %v; report %s\nerror: %s\nstderr: %s", waitErr, last, rep.Error, stderr.String())
	}
	if missing := missingChecks(rep.Checks); len(missing) > 0 {
		t.Fatalf("e2e.mjs skipped %v; ran %v", missing, rep.Checks)
	}
	errors := 0
	for _, c := range rep.Checks {
		if strings.HasPrefix(c, "error ") {
			errors++
		}
	}
	if errors != 11 {
		t.Fatalf("e2e.mjs checked %d tool errors, want 11: %v", errors, rep.Checks)
	}
	if len(received) == 0 {
		t.Fatal("e2e.mjs logged no message received")
	}
	return rep, all
}

func missingChecks(ran []string) []string {
	var missing []string
	for _, c := range wantChecks() {
		if !slices.Contains(ran, c) {
			missing = append(missing, c)
		}
	}
	return missing
}

// noCanary fails the test if the provider's credential appears in any of
// texts or in the files of the rig's directory (the store among them).
func (r *rig) noCanary(texts ...string) {
	r.t.Helper()
	for _, s := range texts {
		if strings.Contains(s, canary) {
			r.t.Fatalf("the canary credential crossed the MCP boundary: %s", s)
		}
	}
	files, _ := filepath.Glob(filepath.Join(r.dir, "pw.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			r.t.Fatal(err)
		}
		if bytes.Contains(b, []byte(canary)) {
			r.t.Fatalf("the canary credential reached %s", filepath.Base(f))
		}
	}
}

// progressEvery is the servers' hidden --progress-every: e2e.mjs lets its
// job finish once wait_job's first progress note arrives, which by default
// comes after 5 s.
const progressEvery = "300ms"

func (r *rig) mcpArgs() []string {
	return []string{"mcp", "--store", filepath.Join(r.dir, "pw.db"), "--contracts", r.contracts, "--progress-every", progressEvery}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTypeScriptClients runs the TypeScript SDK's client and the MCP
// Inspector's CLI against one build of pollwarden.
func TestTypeScriptClients(t *testing.T) {
	t.Parallel()
	requireNode(t)
	bin := buildPollwarden(t)
	// Each client has its own rig (provider, store, daemon), so they run
	// side by side.
	t.Run("sdk-stdio", func(t *testing.T) { t.Parallel(); typeScriptClientStdio(t, newRig(t, bin)) })
	t.Run("sdk-http", func(t *testing.T) { t.Parallel(); typeScriptClientHTTP(t, newRig(t, bin)) })
	t.Run("inspector-cli-stdio", func(t *testing.T) { t.Parallel(); inspectorCLIListsTools(t, newRig(t, bin)) })
	t.Run("inspector-cli-http", func(t *testing.T) { t.Parallel(); inspectorCLIListsToolsHTTP(t, newRig(t, bin)) })
}

// typeScriptClientStdio runs e2e.mjs against `pollwarden mcp`, which the
// TypeScript SDK starts as a host would, with the credential in the
// server's environment.
func typeScriptClientStdio(t *testing.T, r *rig) {
	rep, out := r.runE2E("PW_TRANSPORT=stdio", "PW_BIN="+r.bin,
		"PW_ARGS="+jsonString(r.mcpArgs()), "PW_SERVER_ENV="+jsonString(map[string]string{"MCP_TEST_TOKEN": canary}))
	t.Logf("TypeScript SDK over stdio negotiated MCP %s", rep.ProtocolVersion)
	r.noCanary(out)
}

// typeScriptClientHTTP runs e2e.mjs against a real daemon's streamable
// HTTP /mcp with an agent's bearer token.
func typeScriptClientHTTP(t *testing.T, r *rig) {
	base, logs := r.serve()
	rep, out := r.runE2E("PW_TRANSPORT=http", "PW_URL="+base+"/mcp", "PW_TOKEN="+agentToken)
	t.Logf("TypeScript SDK over streamable HTTP negotiated MCP %s", rep.ProtocolVersion)
	r.noCanary(out, logs())
}

// serve starts `pollwarden serve` on a loopback port, with the credential
// in its environment, and returns its base URL and a reader of its
// output.
func (r *rig) serve() (string, func() string) {
	t := r.t
	t.Helper()
	serve := exec.Command(r.bin, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(r.dir, "pw.db"),
		"--contracts", r.contracts, "--tokens", filepath.Join(r.dir, "tokens.yaml"), "--progress-every", progressEvery)
	serve.Env = append(os.Environ(), "MCP_TEST_TOKEN="+canary)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	serve.Stdout, serve.Stderr = stdout, stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	return listenAddr(t, stdout, stderr), func() string { return stdout.String() + stderr.String() }
}

// listenAddr reads the address serve prints once it listens.
func listenAddr(t *testing.T, stdout, stderr *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range strings.Split(stdout.String(), "\n") {
			if _, a, ok := strings.Cut(l, "listening on "); ok {
				return strings.TrimSpace(a)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("serve did not say where it listens; stderr: %s", stderr.String())
	return ""
}

// inspectorCLIListsTools runs the MCP Inspector's CLI mode, as a user
// checking a host configuration would, against `pollwarden mcp` over
// stdio.
func inspectorCLIListsTools(t *testing.T, r *rig) {
	// The server runs behind a tee, to read the protocol version the
	// Inspector negotiated and to look for the canary in all it was sent.
	tee, err := exec.LookPath("tee")
	if err != nil {
		t.Fatal(err)
	}
	sent := filepath.Join(r.dir, "sent.jsonl")
	wrapper := filepath.Join(r.dir, "pollwarden-tee")
	script := fmt.Sprintf("#!/bin/sh\n%q \"$@\" | %q %q\n", r.bin, tee, sent)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	out := inspectorToolsList(t, append([]string{"-e", "MCP_TEST_TOKEN=" + canary, wrapper, "--"}, r.mcpArgs()...)...)
	b, err := os.ReadFile(sent)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MCP Inspector CLI over stdio negotiated MCP %s", negotiated(t, b))
	r.noCanary(out, string(b))
}

// inspectorCLIListsToolsHTTP runs the Inspector's CLI against a real
// daemon's /mcp with an agent's bearer token.
func inspectorCLIListsToolsHTTP(t *testing.T, r *rig) {
	base, logs := r.serve()
	out := inspectorToolsList(t, base+"/mcp", "--transport", "http", "--header", "Authorization: Bearer "+agentToken)
	r.noCanary(out, logs())
}

// inspectorToolsList runs the Inspector's CLI with target, checks that
// it listed the five tools with their schemas and returns all it printed.
func inspectorToolsList(t *testing.T, target ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--no-install", "@modelcontextprotocol/inspector", "--cli", "--method", "tools/list"}, target...)
	cmd := exec.CommandContext(ctx, "npx", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var res struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("inspector output is not a tools/list result: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if len(tl.InputSchema) == 0 || len(tl.OutputSchema) == 0 {
			t.Errorf("tool %s listed without its schemas", tl.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"get_job", "get_result", "list_jobs", "request_extension", "submit_job", "wait_job", "watch_job"}; !slices.Equal(names, want) {
		t.Fatalf("inspector listed %v, want %v", names, want)
	}
	return stdout.String() + stderr.String()
}

// negotiated returns the protocol version of the initialize answer among
// the server's JSON-RPC lines.
func negotiated(t *testing.T, lines []byte) string {
	t.Helper()
	for _, l := range bytes.Split(lines, []byte("\n")) {
		var m struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(l, &m) == nil && m.Result.ProtocolVersion != "" {
			return m.Result.ProtocolVersion
		}
	}
	t.Fatalf("no initialize answer among what the server sent: %s", lines)
	return ""
}
