package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/sqlite"
)

// BenchmarkDaemonRSSPerWaitingOperation measures what a waiting operation
// costs a running daemon in memory: `pollwarden serve` as a process on a
// fresh SQLite store, its resident set read (VmRSS) once it has settled,
// then PW_BENCH_RSS_OPS (default 100,000) operations added to its store
// from this process, waiting and not due for an hour, and the resident
// set read again after the daemon's scheduler has looked at the store a
// few times. The figure is the growth divided by the operations. The
// scheduler reads only what is due (ListParams.DueBefore, a batch at a
// time), so it should be near zero: what remains is SQLite's page cache
// and the Go heap's slack. Run with -benchtime 1x; Linux only (/proc).
func BenchmarkDaemonRSSPerWaitingOperation(b *testing.B) {
	n := 100000
	if v := os.Getenv("PW_BENCH_RSS_OPS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	srv := fp.New()
	defer srv.Close()
	dir := b.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		b.Fatal(err)
	}
	cpath := contractFile(b, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		b.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	cmd := exec.Command(os.Args[0], "serve", "--listen", "127.0.0.1:0", "--store", store,
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1", "PROC_TOKEN="+canary)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "listening on ") {
		if time.Now().After(deadline) {
			b.Fatalf("serve did not start: %s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Let the scheduler make a few empty looks (Poll is 1 s).
	time.Sleep(3 * time.Second)
	before := rssOf(b, cmd.Process.Pid)

	raw, err := os.ReadFile(cpath)
	if err != nil {
		b.Fatal(err)
	}
	c, err := contract.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	c.Limits.Deadline = 2 * time.Hour
	st, err := sqlite.Open(context.Background(), store, sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for i := range n {
		op, events, err := policy.NewOperation(c, policy.NewParams{ID: fmt.Sprintf("op-%06d", i), ProviderJobID: fmt.Sprintf("job-%06d", i)}, now)
		if err != nil {
			b.Fatal(err)
		}
		op.NextPollAt = now.Add(time.Hour)
		if err := st.OperationCreate(context.Background(), op, events); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(5 * time.Second)
	after := rssOf(b, cmd.Process.Pid)
	if srv.Count("job-000000") != 0 {
		b.Fatal("an operation not due was polled")
	}
	b.ReportMetric(float64(before)/(1<<20), "rss-before-MiB")
	b.ReportMetric(float64(after)/(1<<20), "rss-after-MiB")
	b.ReportMetric(float64(after-before)/float64(n), "rss-B/waiting-op")
	b.ReportMetric(0, "ns/op")
}

// rssOf reads a process's resident set size, in bytes, from /proc.
func rssOf(b *testing.B, pid int) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}
