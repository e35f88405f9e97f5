package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// submitProvider is a loopback provider that creates jobs: it counts
// the jobs it created and every submission it received with its
// idempotency key, and dedupes submissions by key as documented
// idempotent providers do. hold keeps each submission's answer open
// (after the job is created) until release.
type submitProvider struct {
	srv      *httptest.Server
	mu       sync.Mutex
	jobs     int
	posts    []string // the Idempotency-Key of each submission, "" for none
	byKey    map[string]string
	statuses int
	hold     chan struct{}
	location func(id string) string
}

func newSubmitProvider(t *testing.T) *submitProvider {
	p := &submitProvider{byKey: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", p.submit)
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.statuses++
		p.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"state":"succeeded","result":{"url":"https://files.example/%s.csv"}}`, r.PathValue("id"))
	})
	p.srv = httptest.NewServer(mux)
	p.location = func(id string) string { return p.srv.URL + "/jobs/" + id }
	t.Cleanup(p.srv.Close)
	return p
}

func (p *submitProvider) submit(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+canary {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	p.posts = append(p.posts, key)
	id, seen := p.byKey[key]
	if !seen || key == "" {
		p.jobs++
		id = fmt.Sprintf("job-%d", p.jobs)
		if key != "" {
			p.byKey[key] = id
		}
	}
	hold, loc := p.hold, p.location(id)
	p.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Operation-Location", loc)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"id":%q,"status":"queued"}`, id)
}

func (p *submitProvider) counts() (jobs int, posts []string, statuses int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jobs, append([]string(nil), p.posts...), p.statuses
}

func submitContract(t *testing.T, dir, base, extra string) string {
	t.Helper()
	c := fmt.Sprintf(`version: 1
name: sub-test
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 100ms, max: 200ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
submit:
  url: "%[1]s/v1/jobs"
  job_id_path: id
  status_location: "header:Operation-Location"
%[2]s`, base, extra)
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func submitArgs(t *testing.T, dir, contractPath string, more ...string) []string {
	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, []byte(`{"report":"q3","format":"csv"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return append([]string{"submit", "--contract", contractPath, "--body", body,
		"--store", filepath.Join(dir, "pw.db"), "--json", "--quiet", "--lease-slack", testLeaseSlack}, more...)
}

// killWhileHeld starts a submission, waits until the provider has
// created the job and holds its answer, and SIGKILLs the process before
// the answer can be recorded.
func killWhileHeld(t *testing.T, p *submitProvider, args []string) *proc {
	return killWhenHeld(t, p, func() *proc { return start(t, args...) })
}

// killWhenHeld holds the provider's answers, runs begin (which starts a
// process and makes it submit), waits until the provider has created the
// job, SIGKILLs the process and lets the answers go.
func killWhenHeld(t *testing.T, p *submitProvider, begin func() *proc) *proc {
	p.mu.Lock()
	p.hold = make(chan struct{})
	p.mu.Unlock()
	first := begin()
	waitFor(t, "the submission at the provider", func() bool { _, posts, _ := p.counts(); return len(posts) == 1 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	p.mu.Lock()
	close(p.hold)
	p.hold = nil
	p.mu.Unlock()
	return first
}

// TestSubmitKilledAfterSendWithoutKeyNeverResends: the process dies
// after sending, before the answer is recorded; the contract declares no
// idempotency key, so the rerun sends nothing and asks a person.
func TestSubmitKilledAfterSendWithoutKeyNeverResends(t *testing.T) {
	t.Parallel()
	p := newSubmitProvider(t)
	dir := t.TempDir()
	args := submitArgs(t, dir, submitContract(t, dir, p.srv.URL, ""))
	first := killWhileHeld(t, p, args)
	second := start(t, args...)
	if code := second.exitCode(t); code != 26 {
		t.Fatalf("rerun exit %d, want 26 (integration_failure); stdout %s stderr %s", code, second.stdout.String(), second.stderr.String())
	}
	out := outcome(t, second)
	if out["reason"] != "integration_failure" || !strings.Contains(fmt.Sprint(out), "may or may not have the job") {
		t.Fatalf("outcome %v", out)
	}
	third := start(t, args...)
	if code := third.exitCode(t); code != 26 {
		t.Fatalf("third run exit %d, want 26", code)
	}
	if jobs, posts, statuses := p.counts(); jobs != 1 || len(posts) != 1 || statuses != 0 {
		t.Fatalf("provider created %d jobs from %d submissions and saw %d status requests; want 1, 1, 0", jobs, len(posts), statuses)
	}
	assertNoCanary(t, dir, first, second, third)
}

// TestSubmitKilledAfterSendWithKeyResendsSameKey: with a declared key,
// the rerun sends the submission again with the stored key, and the
// provider keeps one job.
func TestSubmitKilledAfterSendWithKeyResendsSameKey(t *testing.T) {
	t.Parallel()
	p := newSubmitProvider(t)
	dir := t.TempDir()
	args := submitArgs(t, dir, submitContract(t, dir, p.srv.URL, "  idempotency_key_header: Idempotency-Key\n"))
	first := killWhileHeld(t, p, args)
	second := start(t, args...)
	if code := second.exitCode(t); code != 0 {
		t.Fatalf("rerun exit %d, want 0; stdout %s stderr %s", code, second.stdout.String(), second.stderr.String())
	}
	jobs, posts, _ := p.counts()
	if jobs != 1 || len(posts) != 2 {
		t.Fatalf("provider created %d jobs from %d submissions; want 1 from 2", jobs, len(posts))
	}
	for _, k := range posts {
		if k == "" || k != posts[0] {
			t.Fatalf("submissions carried keys %q, want one stored key on each", posts)
		}
	}
	if out := outcome(t, second); out["provider_job_id"] != "job-1" || out["outcome"] != "succeeded" {
		t.Fatalf("outcome %v", out)
	}
	assertNoCanary(t, dir, first, second)
}

// TestSubmitResumedAfterAnswerNeverResubmits: once the answer is
// recorded, running the command again only waits.
func TestSubmitResumedAfterAnswerNeverResubmits(t *testing.T) {
	t.Parallel()
	p := newSubmitProvider(t)
	dir := t.TempDir()
	args := submitArgs(t, dir, submitContract(t, dir, p.srv.URL, ""))
	first := start(t, append(args, "--no-wait")...)
	if code := first.exitCode(t); code != 0 {
		t.Fatalf("--no-wait exit %d; stderr %s", code, first.stderr.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(first.stdout.Bytes(), &rec); err != nil || rec["provider_job_id"] != "job-1" || rec["phase"] != "waiting" {
		t.Fatalf("--no-wait printed %s (%v)", first.stdout.String(), err)
	}
	second := start(t, args...)
	if code := second.exitCode(t); code != 0 {
		t.Fatalf("rerun exit %d; stderr %s", code, second.stderr.String())
	}
	if jobs, posts, statuses := p.counts(); jobs != 1 || len(posts) != 1 || statuses != 1 {
		t.Fatalf("provider created %d jobs from %d submissions, %d status requests; want 1, 1, 1", jobs, len(posts), statuses)
	}
	assertNoCanary(t, dir, first, second)
}

// TestSubmitStatusLocationOutsideOriginsRefused: a 202 whose
// Operation-Location names another host or another port is refused with
// integration_failure, and nothing is sent there.
func TestSubmitStatusLocationOutsideOriginsRefused(t *testing.T) {
	t.Parallel()
	var elsewhere int
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere++
		mu.Unlock()
		fmt.Fprint(w, `{"state":"succeeded","result":{"url":"https://x.example/a"}}`)
	}))
	defer other.Close()
	for name, loc := range map[string]func(p *submitProvider, id string) string{
		"another port": func(_ *submitProvider, id string) string { return other.URL + "/jobs/" + id },
		"another host": func(p *submitProvider, id string) string {
			return strings.Replace(p.srv.URL, "127.0.0.1", "localhost", 1) + "/jobs/" + id
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := newSubmitProvider(t)
			p.location = func(id string) string { return loc(p, id) }
			dir := t.TempDir()
			run := start(t, submitArgs(t, dir, submitContract(t, dir, p.srv.URL, ""))...)
			wantLocationRefused(t, run, "not an allowed origin")
			mu.Lock()
			n := elsewhere
			mu.Unlock()
			if _, _, statuses := p.counts(); n != 0 || statuses != 0 {
				t.Fatalf("%d requests went to the other server, %d status requests to the provider; want none", n, statuses)
			}
			assertNoCanary(t, dir, run)
		})
	}
}

// wantLocationRefused checks that a submission run ended escalated
// integration_failure (exit 26) for a refused status location, its
// outcome saying why.
func wantLocationRefused(t *testing.T, run *proc, why string) {
	t.Helper()
	if code := run.exitCode(t); code != 26 {
		t.Fatalf("exit %d, want 26; stdout %s stderr %s", code, run.stdout.String(), run.stderr.String())
	}
	if out := outcome(t, run); !strings.Contains(fmt.Sprint(out), why) {
		t.Fatalf("outcome %v", out)
	}
}
