package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// keptProvider answers status requests by job: "weird-*" in a state no
// test contract lists at first, "done-*" succeeded with an output file,
// and "slow-*" running until released. It serves the output files and
// counts status requests by job; everything needs the canary token.
type keptProvider struct {
	released atomic.Bool
	mu       sync.Mutex
	counts   map[string]int
}

func (p *keptProvider) count(job string) int { p.mu.Lock(); defer p.mu.Unlock(); return p.counts[job] }

func (p *keptProvider) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(401)
			return
		}
		id := r.PathValue("id")
		p.mu.Lock()
		p.counts[id]++
		p.mu.Unlock()
		switch {
		case strings.HasPrefix(id, "weird"):
			fmt.Fprint(w, `{"state":"awaiting_review"}`)
		case strings.HasPrefix(id, "slow") && !p.released.Load():
			fmt.Fprint(w, `{"state":"running"}`)
		default:
			fmt.Fprintf(w, `{"state":"succeeded","output_file_id":"file-%s"}`, id)
		}
	})
	mux.HandleFunc("GET /files/{id}/content", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(404)
			return
		}
		fmt.Fprintf(w, "rows of %s\n", r.PathValue("id"))
	})
	return mux
}

// keptContract is a contract named name on base; pending lists the
// pending states, limits its limits line.
func keptContract(t *testing.T, path, name, base, pending, limits string) string {
	t.Helper()
	c := fmt.Sprintf(`version: 1
name: %s
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [%s], success: [succeeded], failure: [failed]}
result:
  require: [{path: output_file_id, kind: string}]
  fetch: {url: "%s/files/{output_file_id}/content", max_bytes: 1000}
backoff: {base: 150ms, max: 300ms}
limits: {%s}
`, name, base, pending, base, limits)
	if err := os.WriteFile(path, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startIn starts pollwarden in directory dir, without
// POLLWARDEN_CONTRACTS (so only what the store keeps can name a
// contract) and with the canary as its credential.
func startIn(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "POLLWARDEN_CONTRACTS=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, "PW_TEST_BE_MAIN=1", "PROC_TOKEN="+canary)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// runIn runs pollwarden in dir to its end and returns the process and its
// exit code.
func runIn(t *testing.T, dir string, args ...string) (*proc, int) {
	t.Helper()
	p := startIn(t, dir, args...)
	return p, p.exitCode(t)
}

// TestStoredContractFollowUpsFromAnotherDirectory is the newcomer's
// scenario: operations created with `wait --contract ./my-export.yaml`,
// then every follow-up the tool prints, run from another directory with
// no POLLWARDEN_CONTRACTS: ops show and its hints, decide (abandon),
// result --out, and the resume with --operation-id alone, counters
// intact. A resume naming a same-name file that differs is refused,
// saying what differs. The canary credential reaches no file.
func TestStoredContractFollowUpsFromAnotherDirectory(t *testing.T) {
	t.Parallel()
	prov := &keptProvider{counts: map[string]int{}}
	srv := httptest.NewServer(prov.handler())
	t.Cleanup(srv.Close)
	home, elsewhere := t.TempDir(), t.TempDir()
	keptContract(t, filepath.Join(home, "my-export.yaml"), "my-export", srv.URL, "queued, running",
		"deadline: 60s, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3")
	store := filepath.Join(home, "pw.db")
	var procs []*proc
	run := func(dir string, want int, args ...string) *proc {
		t.Helper()
		p, code := runIn(t, dir, append(args, "--store", store)...)
		procs = append(procs, p)
		if code != want {
			t.Fatalf("pollwarden %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, p.stdout.String(), p.stderr.String())
		}
		return p
	}

	// An escalation, answered from elsewhere: ops show, then abandon.
	first, code := runIn(t, home, "wait", "--contract", "./my-export.yaml", "--job-id", "weird-1", "--operation-id", "op-weird", "--store", store)
	procs = append(procs, first)
	if code == 0 || !strings.Contains(first.stdout.String(), "decide with: pollwarden decide op-weird") {
		t.Fatalf("wait on an unlisted state: exit %d\n%s%s", code, first.stdout.String(), first.stderr.String())
	}
	if out := run(elsewhere, 0, "ops", "show", "op-weird").stdout.String(); !strings.Contains(out, "escalated") || !strings.Contains(out, "[abandon]") {
		t.Fatalf("ops show from another directory:\n%s", out)
	}
	if out := run(elsewhere, 0, "decide", "op-weird", "abandon", "--by", "alice").stdout.String(); !strings.HasPrefix(out, "failed") {
		t.Fatalf("decide abandon from another directory: %s", out)
	}

	// A success, its result fetched from elsewhere.
	run(home, 0, "wait", "--contract", "./my-export.yaml", "--job-id", "done-1", "--operation-id", "op-done", "--quiet")
	out := filepath.Join(elsewhere, "results.csv")
	run(elsewhere, 0, "result", "op-done", "--out", out)
	if b, err := os.ReadFile(out); err != nil || string(b) != "rows of file-done-1\n" {
		t.Fatalf("result --out: %q, %v", b, err)
	}

	// An interrupted wait: its printed resume needs no file, nor do the
	// hints of ops show; the resume keeps the counters.
	w := startIn(t, home, "wait", "--contract", "./my-export.yaml", "--job-id", "slow-1", "--operation-id", "op-slow", "--store", store)
	procs = append(procs, w)
	waitFor(t, "two status requests", func() bool { return prov.count("slow-1") >= 2 })
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := w.exitCode(t); code != 130 {
		t.Fatalf("interrupted wait: exit %d\n%s", code, w.stderr.String())
	}
	resume := "pollwarden wait --operation-id op-slow --store " + store
	if !strings.Contains(w.stderr.String(), resume) {
		t.Fatalf("the interrupted wait does not print %q:\n%s", resume, w.stderr.String())
	}
	// ops show's hints (shown once the operation is a minute overdue)
	// are held to the same command by the cli package's tests.
	if p, code := runIn(t, elsewhere, "ops", "show", "op-slow", "--store", store); code != 0 || !strings.Contains(p.stdout.String(), "waiting") {
		t.Fatalf("ops show of the interrupted operation: exit %d\n%s%s", code, p.stdout.String(), p.stderr.String())
	}
	before := prov.count("slow-1")

	// A same-name file that differs is refused, saying what differs; the
	// record is unchanged and nothing is sent.
	other := keptContract(t, filepath.Join(elsewhere, "my-export.yaml"), "my-export", srv.URL, "queued, running",
		"deadline: 30s, max_status_requests: 90, max_transport_failures: 3, max_rate_limited: 3")
	refused := run(elsewhere, 2, "wait", "--contract", other, "--job-id", "slow-1", "--operation-id", "op-slow")
	if msg := refused.stderr.String(); !strings.Contains(msg, "limits.max_status_requests 40 → 90") {
		t.Fatalf("a resume under a differing file does not say what differs:\n%s", msg)
	}
	if prov.count("slow-1") != before {
		t.Fatal("a refused resume sent a status request")
	}

	prov.released.Store(true)
	resumed := run(elsewhere, 0, "wait", "--operation-id", "op-slow", "--json", "--quiet")
	res := outcome(t, resumed)
	if res["phase"] != "succeeded" || res["status_requests_used"].(float64) <= float64(before) || res["max_status_requests"] != float64(40) {
		t.Fatalf("resumed with --operation-id alone: %v (the interrupted wait had sent %d)", res, before)
	}
	run(elsewhere, 2, "wait", "--operation-id", "no-such-op")
	assertNoCanary(t, home, procs...)
	assertNoCanary(t, elsewhere)
}

// TestServeWithSameNameFileStepsUnderStoredContract: a CLI wait is
// interrupted; a daemon on the same store loads another file with the
// same contract name (other limits, another state table). It never
// escalates the operation as "edited": it steps it under the contract the
// store keeps, to the outcome that contract gives.
func TestServeWithSameNameFileStepsUnderStoredContract(t *testing.T) {
	t.Parallel()
	prov := &keptProvider{counts: map[string]int{}}
	srv := httptest.NewServer(prov.handler())
	t.Cleanup(srv.Close)
	home := t.TempDir()
	store := filepath.Join(home, "pw.db")
	keptContract(t, filepath.Join(home, "c.yaml"), "proc-kept", srv.URL, "running",
		"deadline: 60s, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3")
	w := startIn(t, home, "wait", "--contract", "./c.yaml", "--job-id", "slow-2", "--operation-id", "op-taken", "--store", store, "--quiet")
	waitFor(t, "a status request", func() bool { return prov.count("slow-2") >= 1 })
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := w.exitCode(t); code != 130 {
		t.Fatalf("interrupted wait: exit %d\n%s", code, w.stderr.String())
	}

	// The daemon's file of that name: "succeeded" is not in its table,
	// and its limits are raised.
	cdir := filepath.Join(home, "served")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := keptContract(t, filepath.Join(cdir, "proc-kept.yaml"), "proc-kept", srv.URL, "running",
		"deadline: 120s, max_status_requests: 90, max_transport_failures: 3, max_rate_limited: 3")
	b, _ := os.ReadFile(c)
	if err := os.WriteFile(c, []byte(strings.Replace(string(b), "success: [succeeded]", "success: [complete]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: alice, role: approver, sha256: %q}\n", sum("alice-token"))
	if err := os.WriteFile(filepath.Join(home, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startIn(t, home, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", filepath.Join(home, "tokens.yaml"))
	t.Cleanup(func() { _ = d.cmd.Process.Kill(); _ = d.cmd.Wait() })
	base := listenAddr(t, d)
	waitFor(t, "the daemon to step the operation", func() bool { return prov.count("slow-2") >= 3 })
	if _, body := send(t, base, "alice-token", "GET", "/v1/operations/op-taken", "", ""); !strings.Contains(body, `"phase": "waiting"`) {
		t.Fatalf("under the daemon, before the job ends: %s", body)
	}
	prov.released.Store(true)
	var body string
	waitFor(t, "the operation to end", func() bool {
		_, body = send(t, base, "alice-token", "GET", "/v1/operations/op-taken", "", "")
		return !strings.Contains(body, `"phase": "waiting"`)
	})
	if !strings.Contains(body, `"phase": "succeeded"`) || !strings.Contains(body, `"max_status_requests": 40`) {
		t.Fatalf("the daemon did not run the operation under its stored contract: %s", body)
	}
	story, code := runIn(t, home, "audit", "show", "op-taken", "--store", store)
	if code != 0 || strings.Contains(story.stdout.String(), "edited") || strings.Contains(story.stdout.String(), "contract_changed") {
		t.Fatalf("audit show (exit %d):\n%s%s", code, story.stdout.String(), story.stderr.String())
	}
	assertNoCanary(t, home, w, d, story)
}

// TestUseCurrentContractThroughTheAPI: an operation escalated on a state
// its stored contract does not list is offered use_current_contract when
// the daemon's file of that name differs (the label says what differs);
// an agent may not choose it, an approver may, and the operation then
// goes on under the new file to its end. Once moved, nothing differs and
// the option is refused.
func TestUseCurrentContractThroughTheAPI(t *testing.T) {
	t.Parallel()
	prov := &keptProvider{counts: map[string]int{}}
	srv := httptest.NewServer(prov.handler())
	t.Cleanup(srv.Close)
	home := t.TempDir()
	store := filepath.Join(home, "pw.db")
	keptContract(t, filepath.Join(home, "c.yaml"), "proc-move", srv.URL, "running",
		"deadline: 60s, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3")
	w, code := runIn(t, home, "wait", "--contract", "./c.yaml", "--job-id", "weird-2", "--operation-id", "op-move", "--store", store, "--quiet")
	if code == 0 {
		t.Fatalf("wait on an unlisted state: exit 0\n%s", w.stdout.String())
	}
	cdir := filepath.Join(home, "served")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	keptContract(t, filepath.Join(cdir, "proc-move.yaml"), "proc-move", srv.URL, "running, awaiting_review",
		"deadline: 60s, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3")
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(filepath.Join(home, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startIn(t, home, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", filepath.Join(home, "tokens.yaml"))
	t.Cleanup(func() { _ = d.cmd.Process.Kill(); _ = d.cmd.Wait() })
	base := listenAddr(t, d)

	_, body := send(t, base, "alice-token", "GET", "/v1/operations/op-move", "", "")
	if !strings.Contains(body, `"id": "use_current_contract"`) || !strings.Contains(body, "the state table changed") {
		t.Fatalf("the escalation does not offer use_current_contract saying what differs: %s", body)
	}
	if code, body := send(t, base, "agent-token", "POST", "/v1/operations/op-move/decisions", `{"option":"use_current_contract"}`, ""); code != 403 {
		t.Fatalf("an agent chose use_current_contract: %d %s", code, body)
	}
	sent := prov.count("weird-2")
	if code, body := send(t, base, "alice-token", "POST", "/v1/operations/op-move/decisions", `{"option":"use_current_contract","note":"the review state is pending"}`, ""); code != 200 {
		t.Fatalf("an approver's use_current_contract: %d %s", code, body)
	}
	waitFor(t, "a status request under the new contract", func() bool { return prov.count("weird-2") > sent })
	_, body = send(t, base, "alice-token", "GET", "/v1/operations/op-move", "", "")
	if !strings.Contains(body, `"phase": "waiting"`) {
		t.Fatalf("after use_current_contract, awaiting_review is pending: %s", body)
	}
	if code, body := send(t, base, "alice-token", "POST", "/v1/operations/op-move/decisions", `{"option":"use_current_contract"}`, ""); code != 409 || !strings.Contains(body, "nothing to take up") {
		t.Fatalf("use_current_contract when nothing differs: %d %s", code, body)
	}
	story, _ := runIn(t, home, "audit", "show", "op-move", "--store", store)
	if !strings.Contains(story.stdout.String(), "use_current_contract") {
		t.Fatalf("the story does not record the decision:\n%s", story.stdout.String())
	}
	assertNoCanary(t, home, w, d, story)
}

// TestOpsShowOffersCurrentContract: `ops show` of an operation escalated
// on a state its stored contract does not list offers use_current_contract,
// saying what differs, once POLLWARDEN_CONTRACTS holds a different file of
// its name (and not without it); decide moves it, and the offer is gone.
func TestOpsShowOffersCurrentContract(t *testing.T) {
	t.Parallel()
	prov := &keptProvider{counts: map[string]int{}}
	srv := httptest.NewServer(prov.handler())
	t.Cleanup(srv.Close)
	home := t.TempDir()
	store := filepath.Join(home, "pw.db")
	limits := "deadline: 60s, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3"
	keptContract(t, filepath.Join(home, "c.yaml"), "proc-show", srv.URL, "running", limits)
	w, code := runIn(t, home, "wait", "--contract", "./c.yaml", "--job-id", "weird-3", "--operation-id", "op-show", "--store", store, "--quiet")
	if code == 0 {
		t.Fatalf("wait on an unlisted state: exit 0\n%s", w.stdout.String())
	}
	show, code := runIn(t, home, "ops", "show", "op-show", "--store", store)
	if code != 0 || strings.Contains(show.stdout.String(), "use_current_contract") {
		t.Fatalf("ops show with no other contract loaded (exit %d) offers use_current_contract:\n%s%s", code, show.stdout.String(), show.stderr.String())
	}
	cdir := filepath.Join(home, "now")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	keptContract(t, filepath.Join(cdir, "proc-show.yaml"), "proc-show", srv.URL, "running, awaiting_review", limits)
	withContracts := func(args ...string) (*proc, int) {
		t.Helper()
		p := &proc{cmd: exec.Command(os.Args[0], args...)}
		p.cmd.Dir = home
		p.cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1", "PROC_TOKEN="+canary, "POLLWARDEN_CONTRACTS="+cdir)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return p, p.exitCode(t)
	}
	show, code = withContracts("ops", "show", "op-show", "--store", store)
	out := show.stdout.String()
	if code != 0 || !strings.Contains(out, "[use_current_contract] Go on under the contract loaded now (the state table changed") {
		t.Fatalf("ops show (exit %d) does not offer use_current_contract saying what differs:\n%s%s", code, out, show.stderr.String())
	}
	js, code := withContracts("ops", "show", "op-show", "--store", store, "--json")
	if code != 0 || !strings.Contains(js.stdout.String(), `"id":"use_current_contract"`) {
		t.Fatalf("ops show --json (exit %d) lacks the option:\n%s", code, js.stdout.String())
	}
	dec, code := withContracts("decide", "op-show", "use_current_contract", "--by", "alice", "--store", store)
	if code != 0 {
		t.Fatalf("decide use_current_contract: exit %d\n%s%s", code, dec.stdout.String(), dec.stderr.String())
	}
	after, code := withContracts("ops", "show", "op-show", "--store", store)
	if code != 0 || !strings.HasPrefix(after.stdout.String(), "waiting") || strings.Contains(after.stdout.String(), "[use_current_contract]") {
		t.Fatalf("ops show after the move (exit %d):\n%s%s", code, after.stdout.String(), after.stderr.String())
	}
	assertNoCanary(t, home, w, show, js, dec, after)
}
