package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServeEndToEnd runs the real daemon as a process: an agent registers
// a job, long-polls it to an escalation, an approver extends it, the
// scheduler resumes it; a bad contract on SIGHUP keeps the old set; SIGTERM
// stops it cleanly.
func TestServeEndToEnd(t *testing.T) {
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
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
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
	for time.Now().Before(deadline) {
		op := call(t, base, "agent-token", "GET", "/v1/operations/"+id+"?wait=5s", "", 200)
		if op["phase"] == phase {
			return op
		}
	}
	t.Fatalf("operation %s never reached %s", id, phase)
	return nil
}
