package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/sqlite"
)

// daemonDir lays out what serve needs for the submit tests: a contracts
// folder holding the submit contract (extra lines appended to its submit
// block) and a tokens file; it returns serve's arguments.
func daemonDir(t *testing.T, p *submitProvider, extra string) (dir string, args []string) {
	dir = t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	submitContract(t, cdir, p.srv.URL, extra)
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"), "--lease-slack", testLeaseSlack}
}

const daemonSubmit = `{"operation_id":"sub-d","contract":"sub-test","submit":{"body":{"report":"q3","format":"csv"}}}`

// killServeWhileHeld submits through serve's API, waits until the
// provider has created the job and holds its answer, and SIGKILLs serve
// before the answer can be recorded.
func killServeWhileHeld(t *testing.T, p *submitProvider, args []string) *proc {
	return killWhenHeld(t, p, func() *proc {
		first := start(t, args...)
		base := listenAddr(t, first)
		go func() {
			req, _ := http.NewRequest("POST", base+"/v1/operations", strings.NewReader(daemonSubmit))
			req.Header.Set("Authorization", "Bearer agent-token")
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		return first
	})
}

// serveKilledAndRestarted kills serve while its submission's answer is
// held (killServeWhileHeld) and starts the next serve on the same store;
// base is the new one's address.
func serveKilledAndRestarted(t *testing.T, extra string) (p *submitProvider, dir string, first, second *proc, base string) {
	p = newSubmitProvider(t)
	dir, args := daemonDir(t, p, extra)
	first = killServeWhileHeld(t, p, args)
	second = start(t, args...)
	t.Cleanup(func() { _ = second.cmd.Process.Kill() })
	return p, dir, first, second, listenAddr(t, second)
}

// TestServeTakesOverSubmissionWithoutKey: serve dies after sending a
// submission, before recording its answer. The next serve finds the
// operation still submitting and, the contract declaring no idempotency
// key, sends nothing: it escalates integration_failure with the question.
func TestServeTakesOverSubmissionWithoutKey(t *testing.T) {
	t.Parallel()
	p, dir, first, second, base := serveKilledAndRestarted(t, "")
	op := waitPhase(t, base, "sub-d", "escalated")
	msg := fmt.Sprint(op["escalation"])
	if op["reason"] != "integration_failure" || !strings.Contains(msg, "may or may not have the job") || !strings.Contains(msg, "resubmit") {
		t.Fatalf("escalation %v", op)
	}
	time.Sleep(500 * time.Millisecond) // a second send, were there one, would have left by now
	if jobs, posts, statuses := p.counts(); jobs != 1 || len(posts) != 1 || statuses != 0 {
		t.Fatalf("provider created %d jobs from %d submissions, %d status requests; want 1, 1, 0", jobs, len(posts), statuses)
	}
	stopServe(t, second)
	assertNoCanary(t, dir, first, second)
}

// TestServeTakesOverSubmissionWithKey: with a declared key the next
// serve re-sends the interrupted submission with the stored key, the
// provider keeps one job, and the daemon then waits for it to its end.
func TestServeTakesOverSubmissionWithKey(t *testing.T) {
	t.Parallel()
	p, dir, first, second, base := serveKilledAndRestarted(t, "  idempotency_key_header: Idempotency-Key\n")
	op := waitPhase(t, base, "sub-d", "succeeded")
	jobs, posts, statuses := p.counts()
	if jobs != 1 || len(posts) != 2 || statuses != 1 || op["provider_job_id"] != "job-1" {
		t.Fatalf("provider created %d jobs from %d submissions, %d status requests, record %v; want 1 from 2, 1", jobs, len(posts), statuses, op)
	}
	for _, k := range posts {
		if k == "" || k != posts[0] {
			t.Fatalf("submissions carried keys %q, want the one stored key on each", posts)
		}
	}
	stopServe(t, second)
	assertNoCanary(t, dir, first, second)
}

// TestServeSendsSubmissionRecordedButNeverSent: a submitter died after
// recording the submission and before sending it (the record is written
// here as it left it). serve sends it once, as its first attempt, and
// waits for the job.
func TestServeSendsSubmissionRecordedButNeverSent(t *testing.T) {
	t.Parallel()
	p := newSubmitProvider(t)
	dir, args := daemonDir(t, p, "")
	recordUnsent(t, filepath.Join(dir, "contracts", "c.yaml"), filepath.Join(dir, "pw.db"), "sub-d", "build-agent", `{"report":"q3"}`)
	srv := start(t, args...)
	defer srv.cmd.Process.Kill()
	base := listenAddr(t, srv)
	if op := waitPhase(t, base, "sub-d", "succeeded"); op["provider_job_id"] != "job-1" {
		t.Fatalf("record %v", op)
	}
	if jobs, posts, _ := p.counts(); jobs != 1 || len(posts) != 1 {
		t.Fatalf("provider created %d jobs from %d submissions; want 1 from 1", jobs, len(posts))
	}
	stopServe(t, srv)
	assertNoCanary(t, dir, srv)
}

func stopServe(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM: %s", code, p.stderr.String())
	}
}

// recordUnsent writes the record a submitter leaves when it dies after
// recording a submission and before sending it (created 20 s ago, so no
// live submitter can still be about to send it).
func recordUnsent(t *testing.T, contractPath, storePath, id, owner, body string) {
	t.Helper()
	b, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contract.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, storePath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	op, events, err := policy.NewSubmission(c, policy.NewParams{ID: id, Owner: owner}, []byte(body), "", time.Now().Add(-20*time.Second))
	if err == nil {
		err = st.OperationCreate(ctx, op, events)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestSubmitResumedBeforeSendSendsOnce: the submitter died after
// recording the submission and before sending it; running the same
// command again sends it once, as its first attempt.
func TestSubmitResumedBeforeSendSendsOnce(t *testing.T) {
	t.Parallel()
	p := newSubmitProvider(t)
	dir := t.TempDir()
	path := submitContract(t, dir, p.srv.URL, "")
	args := submitArgs(t, dir, path, "--operation-id", "sub-b")
	recordUnsent(t, path, filepath.Join(dir, "pw.db"), "sub-b", "cli:someone", `{"report":"q3","format":"csv"}`)
	run := start(t, args...)
	if code := run.exitCode(t); code != 0 {
		t.Fatalf("exit %d; stdout %s stderr %s", code, run.stdout.String(), run.stderr.String())
	}
	if out := outcome(t, run); out["provider_job_id"] != "job-1" || out["outcome"] != "succeeded" {
		t.Fatalf("outcome %v", out)
	}
	if jobs, posts, _ := p.counts(); jobs != 1 || len(posts) != 1 {
		t.Fatalf("provider created %d jobs from %d submissions; want 1 from 1", jobs, len(posts))
	}
	assertNoCanary(t, dir, run)
}
