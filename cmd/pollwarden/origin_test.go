package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// These tests play an agent, and a hostile provider, trying to make a real
// pollwarden process send the status credential somewhere the contract
// does not name: another port of the provider's host, plain http, a
// redirect elsewhere, or extra parameters on the cancel call.

// listener records whatever reaches an address the credential must never
// reach, and answers like a provider would, so that a process that did
// send there carries on rather than failing for another reason.
type listener struct {
	mu   sync.Mutex
	seen []string // "METHOD PATH auth=…" per request
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.seen = append(l.seen, fmt.Sprintf("%s %s auth=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization")))
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"state":"running"}`)
}

func (l *listener) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// originRig is an https provider on loopback (the fake provider behind
// httptest's TLS server, trusted by the child through SSL_CERT_FILE), with
// a /cancel?id= endpoint that records the query it got, and two attacker
// listeners on other ports of the same host: one plain http, one https.
type originRig struct {
	provider          *fp.Server
	base              string // https://127.0.0.1:PORT
	port              string
	plain, tls        *listener
	plainURL, tlsURL  string
	dir, contracts    string
	env               []string
	mu                sync.Mutex
	cancels           []url.Values
	cancelAuthorities []string
}

func newOriginRig(t *testing.T) *originRig {
	t.Helper()
	r := &originRig{provider: fp.New(), plain: &listener{}, tls: &listener{}, dir: t.TempDir()}
	t.Cleanup(r.provider.Close)
	r.provider.RequireToken(canary)
	inner := r.provider.Handler()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/cancel" {
			r.mu.Lock()
			r.cancels = append(r.cancels, req.URL.Query())
			r.cancelAuthorities = append(r.cancelAuthorities, req.Header.Get("Authorization"))
			r.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"state":"cancelling"}`)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	plain := httptest.NewServer(r.plain)
	t.Cleanup(plain.Close)
	tlsAttacker := httptest.NewTLSServer(r.tls)
	t.Cleanup(tlsAttacker.Close)
	r.base, r.plainURL, r.tlsURL = srv.URL, plain.URL, tlsAttacker.URL
	r.port = srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]

	// httptest's TLS servers share one certificate; trusting it lets the
	// https attacker receive the credential too if pollwarden sent it.
	cert := filepath.Join(r.dir, "provider.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(cert, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	r.contracts = filepath.Join(r.dir, "contracts")
	if err := os.Mkdir(r.contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: origin-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running, cancelling], success: [succeeded], failure: [failed], cancelled: [cancelled]}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
cancel: {url: "%s/cancel?id={job_id}"}
`, r.base, r.base)
	if err := os.WriteFile(filepath.Join(r.contracts, "origin.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = []string{"PROC_TOKEN=" + canary, "SSL_CERT_FILE=" + cert}
	return r
}

// noAttackerTraffic fails the test if anything reached either listener.
func (r *originRig) noAttackerTraffic(t *testing.T) {
	t.Helper()
	for name, l := range map[string]*listener{"plain http": r.plain, "https": r.tls} {
		if got := l.requests(); len(got) > 0 {
			t.Errorf("the %s listener on another port received %d requests (the credential left the contract's origin): %v", name, len(got), got)
		}
	}
}

// serve starts the daemon with an agent and an approver token.
func (r *originRig) serve(t *testing.T) string {
	t.Helper()
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	tf := filepath.Join(r.dir, "tokens.yaml")
	if err := os.WriteFile(tf, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, r.env, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(r.dir, "pw.db"),
		"--contracts", r.contracts, "--tokens", tf)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return listenAddr(t, p)
}

// post sends a create and returns the status and the error message.
func post(t *testing.T, base, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/operations", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer agent-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAgentCannotSendTheCredentialOffOrigin: through POST /v1/operations,
// an agent names status URLs on the provider's host but another port or
// scheme, or an invalid port; each is refused with 422 naming the problem,
// and nothing reaches the other ports. A provider's 307 to another port is
// not followed either.
func TestAgentCannotSendTheCredentialOffOrigin(t *testing.T) {
	t.Parallel()
	r := newOriginRig(t)
	r.provider.Script("ok1", fp.State("running", nil))
	r.provider.Script("hop-port", fp.Code(http.StatusTemporaryRedirect, map[string]string{"Location": r.tlsURL + "/jobs/hop-port"}))
	r.provider.Script("hop-http", fp.Code(http.StatusTemporaryRedirect, map[string]string{"Location": r.plainURL + "/jobs/hop-http"}))
	base := r.serve(t)

	// The contract's own origin works, with the credential: the rig's TLS
	// trust is real, so the refusals below are not a TLS failure.
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"ok1","contract":"origin-test","job_id":"ok1","max_status_requests":1}`, 201)
	waitPhase(t, base, "ok1", "escalated")
	if auth := r.provider.Authorization("ok1"); len(auth) == 0 || auth[0] != "Bearer "+canary {
		t.Fatalf("the provider did not get the credential over https: %q", auth)
	}

	for _, tc := range []struct{ statusURL, want string }{
		{r.plainURL + "/jobs/ok1", "unencrypted"},
		{r.tlsURL + "/jobs/ok1", "port or scheme is not allowed"},
		{"http://127.0.0.1:" + r.port + "/jobs/ok1", "unencrypted"},
		{"https://127.0.0.1:0/jobs/ok1", "port 0"},
		{"https://127.0.0.1:80/jobs/ok1", "not an allowed origin"},
		{"https://127.0.0.1:99999/jobs/ok1", "port 99999 is out of range"},
		{"https://127.0.0.1:x/jobs/ok1", "not a number"},
	} {
		code, msg := post(t, base, fmt.Sprintf(`{"contract":"origin-test","status_url":%q,"max_status_requests":1}`, tc.statusURL))
		if code != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.want) {
			t.Errorf("status_url %s: %d %s; want 422 naming %q", tc.statusURL, code, msg, tc.want)
		}
	}

	// A hostile provider answers 307 to another port (https) or to plain
	// http: not followed, the operation stops as an integration failure.
	for _, id := range []string{"hop-port", "hop-http"} {
		call(t, base, "agent-token", "POST", "/v1/operations", fmt.Sprintf(`{"operation_id":%q,"contract":"origin-test","job_id":%q,"max_status_requests":2}`, id, id), 201)
		if op := waitPhase(t, base, id, "escalated"); op["reason"] != "integration_failure" {
			t.Errorf("%s: escalated %v, want integration_failure (the redirect refused)", id, op["reason"])
		}
	}
	// Every operation above that was accepted has finished polling; any
	// request to another port would have been made by now.
	r.noAttackerTraffic(t)
}

// TestCancelJobIDStaysOneValue: a job id with '&' and '=' fills a cancel
// URL's query as one encoded value; the provider's cancel call gets no
// parameter the contract did not write.
func TestCancelJobIDStaysOneValue(t *testing.T) {
	t.Parallel()
	r := newOriginRig(t)
	const job = "run-q&force=true&all=1"
	r.provider.Script(job, fp.State("running", nil))
	base := r.serve(t)
	call(t, base, "agent-token", "POST", "/v1/operations", fmt.Sprintf(`{"operation_id":"cancel-q","contract":"origin-test","job_id":%q,"max_status_requests":1}`, job), 201)
	waitPhase(t, base, "cancel-q", "escalated")
	if n := r.provider.Count(job); n != 1 {
		t.Fatalf("the provider saw %d status requests for %q, want 1 (the job id reaches it whole)", n, job)
	}
	call(t, base, "alice-token", "POST", "/v1/operations/cancel-q/decisions", `{"option":"cancel_at_provider","note":"stop it"}`, 200)
	r.mu.Lock()
	cancels, auth := r.cancels, r.cancelAuthorities
	r.mu.Unlock()
	if len(cancels) != 1 {
		t.Fatalf("the provider got %d cancel calls, want 1", len(cancels))
	}
	q := cancels[0]
	if len(q) != 1 || len(q["id"]) != 1 || q.Get("id") != job {
		t.Errorf("cancel query = %v; want only id=%q", q, job)
	}
	if auth[0] != "Bearer "+canary {
		t.Errorf("the cancel call carried %q, want the contract's credential", auth[0])
	}
	r.noAttackerTraffic(t)
}

// TestWaitStatusURLOffOrigin: `pollwarden wait --status-url` on another
// port or scheme of the provider's host exits 2 with the reason, and sends
// nothing.
func TestWaitStatusURLOffOrigin(t *testing.T) {
	t.Parallel()
	r := newOriginRig(t)
	for _, tc := range []struct{ statusURL, want string }{
		{r.plainURL + "/jobs/ok1", "unencrypted"},
		{r.tlsURL + "/jobs/ok1", "not an allowed origin"},
		{"https://127.0.0.1:99999/jobs/ok1", "out of range"},
		{"https://127.0.0.1:0/jobs/ok1", "port 0"},
	} {
		p := startWith(t, r.env, "wait", "--contract", filepath.Join(r.contracts, "origin.yaml"),
			"--status-url", tc.statusURL, "--max-requests", "1", "--store", filepath.Join(r.dir, "wait.db"))
		if code := p.exitCode(t); code != 2 || !strings.Contains(p.stderr.String(), "--status-url") || !strings.Contains(p.stderr.String(), tc.want) {
			t.Errorf("wait --status-url %s: exit %d, stderr %q; want exit 2 naming %q", tc.statusURL, code, p.stderr.String(), tc.want)
		}
	}
	r.noAttackerTraffic(t)
}

// TestMCPWatchJobStatusURLOffOrigin: the same through `pollwarden mcp` on
// stdio, driven by the official SDK client: a tool error, nothing sent.
func TestMCPWatchJobStatusURLOffOrigin(t *testing.T) {
	t.Parallel()
	r := newOriginRig(t)
	h := startMCP(t, []string{"mcp", "--store", filepath.Join(r.dir, "mcp.db"), "--contracts", r.contracts}, r.env)
	for _, tc := range []struct{ statusURL, want string }{
		{r.plainURL + "/jobs/ok1", "unencrypted"},
		{r.tlsURL + "/jobs/ok1", "not an allowed origin"},
		{"https://127.0.0.1:0/jobs/ok1", "port 0"},
	} {
		args, _ := json.Marshal(map[string]any{"contract": "origin-test", "status_url": tc.statusURL, "max_status_requests": 1})
		text, _, isErr := h.call("watch_job", string(args))
		if !isErr || !strings.Contains(text, tc.want) {
			t.Errorf("watch_job status_url %s: isError %v, %q; want a tool error naming %q", tc.statusURL, isErr, text, tc.want)
		}
	}
	r.noAttackerTraffic(t)
}
