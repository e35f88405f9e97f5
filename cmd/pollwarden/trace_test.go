package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServeExportsTraces: a real serve with --otlp-endpoint sends its
// spans to an OTLP/HTTP receiver on loopback; the status request's span
// is the traceparent the provider saw (status.propagate_trace: true), the
// spans name the operation and contract, and the provider credential (a
// canary) is in no exported byte. Without the endpoint, serve sends the
// provider no traceparent.
func TestServeExportsTraces(t *testing.T) {
	t.Parallel()
	srv, recv, dir, cdir := tracedRig(t)
	srv.Script("traced-job", fp.State("running", nil), fp.Succeeded("https://results.example.com/r.csv"))
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--otlp-endpoint", recv.URL)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"traced-1","contract":"traced","job_id":"traced-job"}`, 201)
	waitPhase(t, base, "traced-1", "succeeded")
	// SIGTERM flushes the spans still buffered before serve exits.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, p.stderr.String())
	}

	requests := map[string]bool{} // "traceid-spanid" of each request span
	names := map[string]int{}
	for _, s := range exportedSpans(t, recv) {
		names[s.name]++
		if s.attrs["pollwarden.operation.id"] != "traced-1" || s.attrs["pollwarden.contract"] != "traced" {
			t.Errorf("span %s: %v", s.name, s.attrs)
		}
		if s.name == "pollwarden.request" {
			requests[s.trace+"-"+s.span] = true
		}
	}
	if names["pollwarden.request"] != 2 || names["pollwarden.step"] < 2 || names["pollwarden.claim"] < 2 || names["pollwarden.record"] != 2 {
		t.Fatalf("spans exported: %v", names)
	}
	for i, r := range srv.Requests("traced-job") {
		tp := strings.Split(r.Header.Get("traceparent"), "-")
		if len(tp) != 4 || !requests[tp[1]+"-"+tp[2]] {
			t.Errorf("request %d carried traceparent %q, which is no exported request span", i+1, r.Header.Get("traceparent"))
		}
	}
	assertNoCanary(t, dir, p)

	// The same contract under a serve without an endpoint: no trace, so
	// nothing goes to the provider.
	srv.Script("untraced-job", fp.Succeeded("https://results.example.com/r.csv"))
	off := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "off.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"))
	defer off.cmd.Process.Kill()
	base = listenAddr(t, off)
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"untraced-1","contract":"traced","job_id":"untraced-job"}`, 201)
	waitPhase(t, base, "untraced-1", "succeeded")
	for _, r := range srv.Requests("untraced-job") {
		if tp := r.Header.Get("traceparent"); tp != "" {
			t.Errorf("serve without --otlp-endpoint sent traceparent %q", tp)
		}
	}
}
