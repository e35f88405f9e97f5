package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestResultURLFromTheAnswerStaysOnOrigin: a provider's status answer
// names where the result is (results_url); when that is another port,
// plain http where the contract says https, or another host, `pollwarden
// result` (a real process) refuses it naming the origin, and the other
// listener never sees a request, so never the credential.
func TestResultURLFromTheAnswerStaysOnOrigin(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	var resultsURL atomic.Value
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/jobs/") {
			elsewhere.Add(1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"state":"succeeded","results_url":%q}`, resultsURL.Load())
	}))
	t.Cleanup(prov.Close)
	_, port, _ := net.SplitHostPort(prov.Listener.Addr().String())
	dir := t.TempDir()
	cfile := filepath.Join(dir, "proc-results.yaml")
	if err := os.WriteFile(cfile, fmt.Appendf(nil, `version: 1
name: proc-results
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [running], success: [succeeded]}
result:
  require: [{path: results_url, kind: url}]
  fetch: {url: "{+results_url}", max_bytes: 1024}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, prov.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	for i, tc := range []struct{ name, url, why string }{
		{"another port", "http://127.0.0.1:" + otherPort + "/results", "port or scheme"},
		{"another scheme", "https://127.0.0.1:" + port + "/results", "port or scheme"},
		{"another host", "http://localhost:" + port + "/results", "host is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resultsURL.Store(tc.url)
			op := fmt.Sprintf("op-%d", i)
			w := start(t, "wait", "--contract", cfile, "--job-id", fmt.Sprintf("j-%d", i), "--operation-id", op, "--store", store, "--json")
			if code := w.exitCode(t); code != 0 {
				t.Fatalf("wait: exit %d %s", code, w.stderr.String())
			}
			r := start(t, "result", op, "--store", store, "--contract", cfile)
			if code := r.exitCode(t); code == 0 || !strings.Contains(r.stderr.String(), "not an allowed origin") || !strings.Contains(r.stderr.String(), tc.why) {
				t.Fatalf("result: exit %d, stderr %s", code, r.stderr.String())
			}
			if n := elsewhere.Load(); n != 0 {
				t.Fatalf("%d requests reached a URL off the contract's origin", n)
			}
			assertNoCanary(t, dir, w, r)
		})
	}
}
