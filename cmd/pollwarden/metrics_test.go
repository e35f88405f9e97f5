package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServeMetrics runs the real daemon against the fake provider: one
// operation runs to success, one to a request-budget escalation, and GET
// /metrics (no token) shows the status requests by contract and code, the
// escalation reason, the outcomes, the delay sources, both histograms, and
// the API's own series from the same registry.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))
	srv.Script("quick", fp.State("running", nil), fp.Succeeded("https://example.com/result"))
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"budget","contract":"proc-test","job_id":"slow","max_status_requests":2}`, 201)
	call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"quick","contract":"proc-test","job_id":"quick"}`, 201)
	if op := waitPhase(t, base, "budget", "escalated"); op["reason"] != "request_budget_exhausted" {
		t.Fatalf("escalation: %v", op)
	}
	waitPhase(t, base, "quick", "succeeded")

	// The step histogram is fed as a step returns, just after its change
	// is published: wait for the four steps that sent a request.
	var m map[string]float64
	waitFor(t, "four steps in pollwarden_step_seconds", func() bool {
		m = scrape(t, base)
		return m["pollwarden_step_seconds_count"] == 4
	})
	for series, want := range map[string]float64{
		`pollwarden_status_requests_total{code="200",contract="proc-test"}`: 4,
		`pollwarden_escalations_total{reason="request_budget_exhausted"}`:   1,
		`pollwarden_outcomes_total{outcome="escalated"}`:                    1,
		`pollwarden_outcomes_total{outcome="succeeded"}`:                    1,
		`pollwarden_next_poll_source_total{source="local_backoff"}`:         2,
		`pollwarden_lease_conflicts_total`:                                  0,
		`pollwarden_operations{phase="escalated"}`:                          1,
		`pollwarden_operations{phase="succeeded"}`:                          1,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if n := m["pollwarden_scheduling_lateness_seconds_count"]; n < 4 {
		t.Errorf("pollwarden_scheduling_lateness_seconds_count = %v, want at least 4", n)
	}
	if n := m[`pollwarden_api_requests_total{code="201",route="POST /v1/operations"}`]; n != 2 {
		t.Errorf("API requests series: %v", n)
	}
	if strings.Contains(p.stderr.String(), canary) || strings.Contains(p.stdout.String(), canary) {
		t.Error("the credential reached the daemon's output")
	}
}

// scrape reads GET /metrics into series → value, the series written as
// in the exposition format (labels sorted by name, as the client writes
// them).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d: %s", resp.StatusCode, b)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}
