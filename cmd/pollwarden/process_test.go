package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestMain lets the test binary play the pollwarden binary for subprocess
// tests: with PW_TEST_BE_MAIN=1 it runs main() instead of the tests.
//
// The tests spend most of their time waiting on child processes, timers
// and a provider's answers, not on the CPU, so unless -parallel is given
// they run processTestParallel at once instead of GOMAXPROCS (two on a
// small machine), and one at a time under -race.
func TestMain(m *testing.M) {
	if os.Getenv("PW_TEST_BE_MAIN") == "1" {
		if skew := os.Getenv("PW_TEST_CLOCK_SKEW"); skew != "" {
			skewedMain(skew)
			return
		}
		main()
		return
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	switch {
	case given:
	case raceEnabled:
		_ = flag.Set("test.parallel", "1")
	default:
		_ = flag.Set("test.parallel", strconv.Itoa(max(processTestParallel, runtime.GOMAXPROCS(0))))
	}
	os.Exit(m.Run())
}

// processTestParallel is how many process tests run at once by default:
// enough to overlap their waits, few enough that a 1 s status timeout is
// not a close call on a loaded 2-core machine. The package's processes
// use about a third of the wall time in CPU, so six at once keep two
// cores busy without queueing for them.
const processTestParallel = 6

const canary = "sk-canary-7Qx9Zt2LmP-process"

// testLeaseSlack is --lease-slack for tests that kill a process holding
// leases: the survivors take its operations over after two status
// timeouts plus this, instead of plus the default five seconds.
const testLeaseSlack = "200ms"

type proc struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
}

// syncBuffer lets a test read a running process's output while exec's
// copying goroutine writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *syncBuffer) String() string { return string(s.Bytes()) }

func contractFile(t testing.TB, dir, base string) string {
	t.Helper()
	c := fmt.Sprintf(`version: 1
name: proc-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, base)
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with extra environment for the process alone, so that
// tests which give a process its secrets can run in parallel (t.Setenv
// cannot).
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Env = append(append(os.Environ(), "PW_TEST_BE_MAIN=1", "PROC_TOKEN="+canary), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 30*time.Second, what, cond)
}

// waitForWithin is waitFor for work whose length the test sets (hundreds
// of requests under a rate ceiling, slowed down by -race).
func waitForWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func outcome(t *testing.T, p *proc) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(p.stdout.Bytes(), &m); err != nil {
		t.Fatalf("outcome JSON: %v\nstdout: %s\nstderr: %s", err, p.stdout.String(), p.stderr.String())
	}
	return m
}

// assertNoCanary checks R27 on everything a run leaves behind.
func assertNoCanary(t *testing.T, dir string, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		if strings.Contains(p.stdout.String()+p.stderr.String(), canary) {
			t.Fatal("the canary secret reached stdout or stderr")
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(canary)) {
			t.Fatalf("the canary secret reached %s", filepath.Base(f))
		}
	}
}

func TestKill9MidWaitThenResumeStaysWithinBudget(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))
	dir := t.TempDir()
	args := []string{"wait", "--contract", contractFile(t, dir, srv.URL()), "--job-id", "slow",
		"--operation-id", "op-kill", "--store", filepath.Join(dir, "pw.db"), "--json", "--quiet", "--lease-slack", testLeaseSlack}
	first := start(t, args...)
	waitFor(t, "three requests", func() bool { return srv.Count("slow") >= 3 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	killedAt := srv.Count("slow")
	second := start(t, args...)
	if code := second.exitCode(t); code != 21 {
		t.Fatalf("resumed run exit %d, want 21; stderr: %s", code, second.stderr.String())
	}
	out := outcome(t, second)
	if n := srv.Count("slow"); n > 10 || n <= killedAt {
		t.Fatalf("provider saw %d requests in total (%d before the kill); budget 10", n, killedAt)
	}
	if out["status_requests_used"] != float64(10) || out["reason"] != "request_budget_exhausted" {
		t.Fatalf("outcome %v", out)
	}
	assertNoCanary(t, dir, first, second)
}

func TestTwoProcessesOneOperationNeverOverlap(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	// A slow answer widens the window in which a second request could
	// overlap the first.
	srv.Script("shared", fp.Step{JSON: map[string]any{"state": "running"}, Delay: 80 * time.Millisecond})
	dir := t.TempDir()
	args := []string{"wait", "--contract", contractFile(t, dir, srv.URL()), "--job-id", "shared",
		"--operation-id", "op-shared", "--store", filepath.Join(dir, "pw.db"), "--json", "--quiet"}
	var procs []*proc
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 2 {
		p := start(t, args...)
		procs = append(procs, p)
		wg.Go(func() {
			c := p.exitCode(t)
			mu.Lock()
			codes[c]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[21] != 2 {
		t.Fatalf("exit codes %v, want both 21; stderr: %s / %s", codes, procs[0].stderr.String(), procs[1].stderr.String())
	}
	if n, peak := srv.Count("shared"), srv.MaxInFlight("shared"); n > 10 || peak != 1 {
		t.Fatalf("provider saw %d requests (budget 10), %d at once", n, peak)
	}
	assertNoCanary(t, dir, procs...)
}

func TestCanaryEchoedByProviderNeverStored(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("echo", fp.Step{JSON: map[string]any{"state": "failed", "error": map[string]any{
		"message": "token " + canary + " is not allowed for export", "auth": "Bearer " + canary}},
		Header: map[string]string{"X-Request-Id": "req-" + canary}})
	dir := t.TempDir()
	p := start(t, "wait", "--contract", contractFile(t, dir, srv.URL()), "--job-id", "echo",
		"--store", filepath.Join(dir, "pw.db"), "--json")
	if code := p.exitCode(t); code != 10 {
		t.Fatalf("exit %d, want 10 (failed); stderr %s", code, p.stderr.String())
	}
	opID, _ := outcome(t, p)["operation_id"].(string)
	readers := []*proc{p}
	for _, args := range [][]string{{"ops", "list", "--json"}, {"ops", "show", opID}, {"audit", "show", opID}, {"audit", "show", opID, "--json"}} {
		r := start(t, append(args, "--store", filepath.Join(dir, "pw.db"))...)
		if code := r.exitCode(t); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, r.stderr.String())
		}
		readers = append(readers, r)
	}
	assertNoCanary(t, dir, readers...)
	if !strings.Contains(p.stdout.String(), "is not allowed for export") {
		t.Fatalf("the provider error was not kept: %s", p.stdout.String())
	}
}
