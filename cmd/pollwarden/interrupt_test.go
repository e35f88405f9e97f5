package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestInterruptedWaitPrintsTheResumeCommand: Ctrl-C (SIGINT) on a real
// `wait` exits 130 and prints the whole command that resumes the
// operation, its store included; that command, run as printed, resumes it to its end with the
// counters it had.
func TestInterruptedWaitPrintsTheResumeCommand(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	running := fp.State("running", nil)
	srv.Script("j", running, running, running, fp.Succeeded("https://results.example.com/j.csv"))
	dir := t.TempDir()
	store := filepath.Join(dir, "pw.db")
	first := start(t, "wait", "--contract", contractFile(t, dir, srv.URL()), "--job-id", "j", "--store", store, "--quiet")
	waitFor(t, "the first request", func() bool { return srv.Count("j") >= 1 })
	if err := first.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := first.exitCode(t); code != 130 {
		t.Fatalf("interrupted wait exit %d, want 130; stderr: %s", code, first.stderr.String())
	}
	msg := first.stderr.String()
	_, cmdline, ok := strings.Cut(strings.TrimSpace(msg), "Resume it, counters intact, with: ")
	// The store keeps the operation's contract and job: the id is enough.
	if !ok || !strings.HasPrefix(cmdline, "pollwarden wait --operation-id proc-test-") || strings.Contains(cmdline, "--contract") ||
		!strings.HasSuffix(cmdline, " --store "+store) {
		t.Fatalf("interrupted wait said %q, want the resume command", msg)
	}
	before := srv.Count("j")
	args := append(strings.Fields(strings.TrimPrefix(cmdline, "pollwarden ")), "--json")
	second := start(t, args...)
	if code := second.exitCode(t); code != 0 {
		t.Fatalf("the printed command exit %d, want 0; stderr: %s", code, second.stderr.String())
	}
	out := outcome(t, second)
	if out["status_requests_used"] != float64(srv.Count("j")) || srv.Count("j") <= before {
		t.Fatalf("resumed outcome %v; the provider saw %d requests, %d before the interrupt", out, srv.Count("j"), before)
	}
	// The story says where the wait stopped and where it was taken up.
	story := start(t, "audit", "show", out["operation_id"].(string), "--store", store)
	if code := story.exitCode(t); code != 0 {
		t.Fatalf("audit show exit %d: %s", code, story.stderr.String())
	}
	text := story.stdout.String()
	stop := strings.Index(text, " interrupted: pollwarden wait (cli:")
	resume := strings.Index(text, " resumed by pollwarden wait (cli:")
	if stop < 0 || resume < stop || !strings.Contains(text[stop:], "stopped waiting; nothing polls it until it is resumed") ||
		!strings.Contains(text[resume:], fmt.Sprintf("%d of ", before)) {
		t.Fatalf("the story does not tell the interrupt then the resume (%d requests before it):\n%s", before, text)
	}
}
