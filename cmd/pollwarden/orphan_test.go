package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServePollsOnWhenItsContractFileIsRemoved: a waiting operation
// whose contract file is removed and reloaded away (SIGHUP) goes on under
// the contract its store keeps, as `ops list` shows from another process;
// one whose deadline passed while the daemon was down and its file
// removed ends deadline_exceeded, sending nothing. (A record from before
// contracts were kept escalates instead: the scheduler's tests.)
func TestServePollsOnWhenItsContractFileIsRemoved(t *testing.T) {
	t.Parallel()
	r := startDaemon(t)
	r.srv.Script("slow", fp.State("running", nil))
	r.srv.Script("late", fp.State("running", nil))
	contractPath := filepath.Join(r.cdir, "c.yaml")
	fast, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	// A slower backoff, so that the budget of 10 lasts well past the
	// reloads below whatever the machine's load.
	original := []byte(strings.Replace(string(fast), "backoff: {base: 150ms, max: 300ms}", "backoff: {base: 1s, max: 2s}", 1))
	if err := os.WriteFile(contractPath, original, 0o600); err != nil {
		t.Fatal(err)
	}
	// Another contract keeps the directory valid once c.yaml is gone.
	other := strings.Replace(string(original), "name: proc-test", "name: other", 1)
	if err := os.WriteFile(filepath.Join(r.cdir, "other.yaml"), []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	reload := func(what string) {
		t.Helper()
		n := strings.Count(r.p.stderr.String(), `"msg":"contracts reloaded"`)
		if err := r.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, what, func() bool { return strings.Count(r.p.stderr.String(), `"msg":"contracts reloaded"`) > n })
	}
	reload("the reload with the slower backoff")

	call(t, r.base, "agent-token", "POST", "/v1/operations", `{"operation_id":"orphan","contract":"proc-test","job_id":"slow"}`, 201)
	waitFor(t, "a first request", func() bool { return r.srv.Count("slow") >= 1 })
	if err := os.Remove(contractPath); err != nil {
		t.Fatal(err)
	}
	reload("the reload without proc-test")
	// The store keeps the contract the operation was created under: the
	// daemon polls on under it, the file gone.
	sent := r.srv.Count("slow")
	waitFor(t, "a request after the reload", func() bool { return r.srv.Count("slow") > sent })
	if _, body := send(t, r.base, "agent-token", "GET", "/v1/operations/orphan", "", ""); !strings.Contains(body, `"phase": "waiting"`) {
		t.Fatalf("after its contract file was removed: %s", body)
	}
	list := start(t, "ops", "list", "--store", r.store)
	if code := list.exitCode(t); code != 0 {
		t.Fatalf("ops list: exit %d: %s", code, list.stderr.String())
	}
	if !hasLine(list.stdout.String(), "orphan", "proc-test", "waiting") || strings.Contains(list.stdout.String(), "not in the daemon's contract set") {
		t.Fatalf("ops list:\n%s", list.stdout.String())
	}

	// The deadline passes while the daemon is down and the contract gone.
	if err := os.WriteFile(contractPath, original, 0o600); err != nil {
		t.Fatal(err)
	}
	reload("the reload with proc-test back")
	op := call(t, r.base, "agent-token", "POST", "/v1/operations", `{"operation_id":"late","contract":"proc-test","job_id":"late","deadline":"3s"}`, 201)
	deadline, err := time.Parse(time.RFC3339Nano, op["deadline_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, r.p.stderr.String())
	}
	if err := os.Remove(contractPath); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(deadline) + 100*time.Millisecond)
	lateSent := r.srv.Count("late")
	r.restart(t)
	op = waitPhase(t, r.base, "late", "escalated")
	if op["reason"] != "deadline_exceeded" || escalationMessage(op) == "" {
		t.Fatalf("past its deadline, its contract file gone: %v", op)
	}
	if r.srv.Count("late") != lateSent {
		t.Fatal("a request was sent past the operation's deadline")
	}
}

func escalationMessage(op map[string]any) string {
	e, _ := op["escalation"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// hasLine reports whether some line of out holds every field.
func hasLine(out string, fields ...string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		all := true
		for _, f := range fields {
			all = all && strings.Contains(line, f)
		}
		if all {
			return true
		}
	}
	return false
}
