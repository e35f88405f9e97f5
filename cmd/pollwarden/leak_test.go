package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// slashCanary has characters that JSON and URL escaping change, a "/" for
// PHP's "\/" among them.
const slashCanary = "sk-canary/7Qx+Zt2=LmP/escaped"

// jsonEscapeAll writes every character of s as \uXXXX, so no byte of s
// appears as it is.
func jsonEscapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// canaryForms are the ways slashCanary could leak: raw, JSON-escaped
// (Go's, every character, PHP's), URL-escaped, and a fragment of each.
func canaryForms() []string {
	goJSON, _ := json.Marshal(slashCanary)
	return []string{slashCanary, string(goJSON[1 : len(goJSON)-1]), jsonEscapeAll(slashCanary),
		strings.ReplaceAll(slashCanary, "/", `\/`), url.QueryEscape(slashCanary), url.PathEscape(slashCanary),
		"7Qx+Zt2", "7Qx%2BZt2", "7Qx%2bZt2", `7Qx\u002bZt2`, "Zt2=LmP", "Zt2%3DLmP", "Zt2%3dLmP"}
}

func assertNoForm(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, f := range canaryForms() {
		if bytes.Contains(b, []byte(f)) {
			t.Errorf("the canary (as %q) reached %s", f, where)
		}
	}
}

func assertNoFormInFiles(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "pw.db*"))
	if len(files) < 2 {
		t.Fatalf("want the store and its WAL, found %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		assertNoForm(t, filepath.Base(f), b)
	}
}

func get(t *testing.T, base, token, path, accept string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return b
}

// servedDir writes the proc-test contract and a tokens file with one agent
// and one approver.
func servedDir(t *testing.T, contract string) (dir, cdir, tokens string) {
	t.Helper()
	dir = t.TempDir()
	cdir = filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "c.yaml"), []byte(contract), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens = filepath.Join(dir, "tokens.yaml")
	body := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, cdir, tokens
}

// TestServeJSONEscapedEchoNeverLeaks is the attack of a provider that
// writes the credential back JSON-escaped (every character as \uXXXX, or
// "/" as "\/" the way PHP does) in the state, the error, a result field
// and a request id: matching the raw body's bytes saw none of it, so it
// reached the answers (API, MCP, webhooks), the store, its WAL and the
// audit chain.
func TestServeJSONEscapedEchoNeverLeaks(t *testing.T) {
	t.Parallel()
	esc, php := jsonEscapeAll(slashCanary), strings.ReplaceAll(slashCanary, "/", `\/`)
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(slashCanary)
	echo := map[string]string{"X-Request-Id": "req-" + esc}
	srv.Script("fail", fp.Step{Header: echo, Body: `{"state":"failed","error":{"message":"token ` + esc + ` refused","auth":"Bearer ` + php + `","` + esc + `":"key"}}`})
	srv.Script("odd", fp.Step{Header: echo, Body: `{"state":"running-` + php + `"}`})
	// And percent-encoded with lower-case hex, which no encoder of the
	// secret writes but a decoder reads the same.
	lowHex := regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(url.QueryEscape(slashCanary), strings.ToLower)
	srv.Script("ok", fp.Step{Header: echo, Body: `{"state":"succeeded","result":{"url":"https://files.example.com/r.csv?sig=` + esc + `&alt=` + php + `&pct=` + lowHex + `"}}`})
	dir, cdir, tokens := servedDir(t, procContract(srv.URL()))
	store := filepath.Join(dir, "pw.db")
	// A webhook receiver: the outcome it is sent must be as clean.
	var hookMu sync.Mutex
	var hookBodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hookBodies = append(hookBodies, b)
		hookMu.Unlock()
	}))
	defer recv.Close()
	hooks := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(hooks, []byte("webhooks:\n  - name: ops\n    url: "+recv.URL+"/hook\n    secret: env:PW_WEBHOOK_SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, []string{"PROC_TOKEN=" + slashCanary, "PW_WEBHOOK_SECRET=" + whCanary}, "serve",
		"--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", tokens, "--webhooks", hooks)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	var answers [][]byte
	keep := func(m map[string]any) map[string]any {
		b, _ := json.Marshal(m)
		answers = append(answers, b)
		return m
	}
	for _, job := range []string{"fail", "odd", "ok"} {
		keep(call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"leak-`+job+`","contract":"proc-test","job_id":"`+job+`"}`, 201))
	}
	if op := keep(waitPhase(t, base, "leak-fail", "failed")); !strings.Contains(fmt.Sprint(op["provider_error"]), "token [REDACTED] refused") {
		t.Errorf("the provider error was not kept, redacted: %v", op["provider_error"])
	}
	if op := keep(waitPhase(t, base, "leak-odd", "escalated")); op["reason"] != "unknown_state" || op["last_state"] != "running-[REDACTED]" {
		t.Errorf("odd state: %v", op)
	}
	if op := keep(waitPhase(t, base, "leak-ok", "succeeded")); fmt.Sprint(op["result"]) != "map[result.url:https://files.example.com/r.csv?sig=[REDACTED]&alt=[REDACTED]&pct=[REDACTED]]" {
		t.Errorf("result: %v", op["result"])
	}
	answers = append(answers, get(t, base, "agent-token", "/v1/operations", ""))
	for _, id := range []string{"leak-fail", "leak-odd", "leak-ok"} {
		answers = append(answers, get(t, base, "agent-token", "/v1/operations/"+id+"/audit", "application/json"),
			get(t, base, "agent-token", "/v1/operations/"+id+"/audit", "text/plain"))
	}
	// The same operations over MCP.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "leak-test", Version: "v0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{"agent-token", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	for _, id := range []string{"leak-fail", "leak-odd", "leak-ok"} {
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "get_job", Arguments: map[string]any{"operation_id": id}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		answers = append(answers, b)
		rr, err := session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "pollwarden://operations/" + id})
		if err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(rr)
		answers = append(answers, b)
	}
	session.Close()
	waitFor(t, "a webhook per outcome", func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return len(hookBodies) >= 3
	})
	hookMu.Lock()
	answers = append(answers, hookBodies...)
	hookMu.Unlock()
	for i, a := range answers {
		assertNoForm(t, fmt.Sprintf("answer %d", i), a)
	}
	if !bytes.Contains(bytes.Join(answers, nil), []byte("req-[REDACTED]")) {
		t.Errorf("the request id was not kept, redacted")
	}
	// The store and its WAL, while the daemon runs, then audit export on
	// the same store.
	assertNoFormInFiles(t, dir)
	export := runCLI(t, nil, "audit", "export", "--store", store)
	assertNoForm(t, "audit export", []byte(export))
	if !strings.Contains(export, "[REDACTED]") || strings.Count(export, "\n") < 9 {
		t.Errorf("audit export: %s", export)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, p.stderr.String())
	}
	assertNoForm(t, "serve's output", append(p.stdout.Bytes(), p.stderr.Bytes()...))
	files, _ := filepath.Glob(filepath.Join(dir, "pw.db*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		assertNoForm(t, filepath.Base(f)+" after stop", b)
	}
}

// procContract is contractFile's contract with an expired state, as text.
func procContract(base string) string {
	return fmt.Sprintf(`version: 1
name: proc-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
  max_body_bytes: 4194304
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed], expired: [expired]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 3, max_transport_failures: 3, max_rate_limited: 3}
`, base)
}

// TestWaitShortSecretKeepsExpired: with the secret "pire", redacting the
// raw body turned the state "expired" into "ex[REDACTED]d", and the job
// escalated unknown_state instead of ending expired (exit 12).
func TestWaitShortSecretKeepsExpired(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken("pire")
	srv.Script("exp", fp.State("expired", map[string]any{"error": "lease pire gone"}))
	dir := t.TempDir()
	cfile := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfile, []byte(procContract(srv.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, []string{"PROC_TOKEN=pire"}, "wait", "--contract", cfile, "--job-id", "exp",
		"--store", filepath.Join(dir, "pw.db"), "--json")
	if code := p.exitCode(t); code != 12 {
		t.Fatalf("exit %d, want 12 (expired); stdout %s stderr %s", code, p.stdout.String(), p.stderr.String())
	}
	if out := outcome(t, p); out["phase"] != "expired" || out["last_state"] != "expired" {
		t.Fatalf("outcome %v", out)
	}
	// The warning's own line: the progress lines name the state the
	// contract lists, "expired", which holds the four letters.
	warning := ""
	for l := range strings.SplitSeq(p.stderr.String(), "\n") {
		if strings.Contains(l, "warning:") {
			warning = l
		}
	}
	if !strings.Contains(warning, "credential env:PROC_TOKEN is shorter than 16 characters") || strings.Contains(warning, "pire") {
		t.Errorf("no warning about the short secret, or one that shows it: %s", p.stderr.String())
	}
}

// TestHugeStateKeepsTheStoreSmall: a 900 KB state, multiplied twenty times
// by the contract's state path, wrote 72 MB of events in one poll. Every
// kept string is capped now; the test bounds each event's stored payload.
func TestHugeStateKeepsTheStoreSmall(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("s", 900<<10)
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("huge", fp.State(big, map[string]any{"error": map[string]any{"message": big}}))
	dir := t.TempDir()
	state := "join('', [" + strings.TrimSuffix(strings.Repeat("state, ", 20), ", ") + "])"
	c := strings.Replace(procContract(srv.URL()), "state: {path: state,", "state: {path: \""+state+"\",", 1)
	c = strings.Replace(c, "pending: [queued, running]", "pending: [queued, running], unlisted: pending", 1)
	cfile := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfile, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	p := start(t, "wait", "--contract", cfile, "--job-id", "huge", "--store", store, "--json", "--max-requests", "2")
	if code := p.exitCode(t); code != 21 {
		t.Fatalf("exit %d, want 21 (budget); stderr %s", code, p.stderr.String())
	}
	if out := outcome(t, p); !strings.Contains(fmt.Sprint(out["last_state"]), "…[cut: ") {
		t.Errorf("the state is not marked as cut: %.200v", out["last_state"])
	}
	db, err := sql.Open("sqlite", "file:"+store+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, largest, total int
	if err := db.QueryRow(`SELECT count(*), max(length(payload)), sum(length(payload)) FROM events`).Scan(&n, &largest, &total); err != nil {
		t.Fatal(err)
	}
	if n < 5 || largest > 4<<10 || total > 32<<10 {
		t.Fatalf("%d events, the largest payload %d bytes, %d in all", n, largest, total)
	}
	var opRow int
	if err := db.QueryRow(`SELECT sum(length(CAST(record AS BLOB))) FROM operations`).Scan(&opRow); err != nil {
		t.Logf("operations row size not read: %v", err)
	} else if opRow > 16<<10 {
		t.Fatalf("the operation record is %d bytes", opRow)
	}
	if len(p.stdout.Bytes()) > 16<<10 {
		t.Fatalf("wait printed %d bytes", len(p.stdout.Bytes()))
	}
}
