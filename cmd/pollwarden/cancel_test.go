package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cancelProvider is a provider whose cancel takes effect slowly, as
// OpenAI's and Anthropic's do: after a cancel its jobs report
// "cancelling" for two status requests, then "cancelled". It counts every
// cancel POST, and can hold cancel calls open until the test lets go.
type cancelProvider struct {
	srv     *httptest.Server
	arrived chan string

	mu   sync.Mutex
	jobs map[string]*cancelJob
	hold chan struct{}
}

type cancelJob struct {
	cancels, status, afterCancel int
	cancelled                    bool
	// answer is the state the cancel's own answer reports.
	answer string
}

func newCancelProvider(t *testing.T) *cancelProvider {
	p := &cancelProvider{jobs: map[string]*cancelJob{}, arrived: make(chan string, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", p.serveStatus)
	mux.HandleFunc("POST /jobs/{id}/cancel", p.serveCancel)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		p.letGo()
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// holdCancels makes cancel calls wait, after being counted, until letGo.
func (p *cancelProvider) holdCancels() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = make(chan struct{})
}

// letGo answers the cancel calls being held, and the later ones at once.
func (p *cancelProvider) letGo() {
	p.mu.Lock()
	h := p.hold
	p.hold = nil
	p.mu.Unlock()
	if h != nil {
		close(h)
	}
}

func (p *cancelProvider) job(id string) *cancelJob {
	j := p.jobs[id]
	if j == nil {
		j = &cancelJob{answer: "cancelling"}
		p.jobs[id] = j
	}
	return j
}

// answerCancelWith sets the state the cancel's answer reports for id.
func (p *cancelProvider) answerCancelWith(id, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.job(id).answer = state
}

func (p *cancelProvider) counts(id string) (cancels, status, afterCancel int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.job(id)
	return j.cancels, j.status, j.afterCancel
}

func (p *cancelProvider) authorized(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+canary {
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}
	return true
}

func (p *cancelProvider) serveStatus(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r) {
		return
	}
	p.mu.Lock()
	j := p.job(r.PathValue("id"))
	j.status++
	state := "running"
	if j.cancelled {
		j.afterCancel++
		state = "cancelling"
		if j.afterCancel > 2 {
			state = "cancelled"
		}
	}
	p.mu.Unlock()
	writeState(w, state)
}

func (p *cancelProvider) serveCancel(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	p.mu.Lock()
	j := p.job(id)
	j.cancels++
	j.cancelled = true
	answer, hold := j.answer, p.hold
	p.mu.Unlock()
	p.arrived <- id
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	writeState(w, answer)
}

func writeState(w http.ResponseWriter, state string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"state": %q}`, state)
}

// cancelRig is a real `serve` with a contract that documents cancel.
type cancelRig struct {
	t     *testing.T
	prov  *cancelProvider
	dir   string
	cdir  string
	store string
	args  []string
	p     *proc
	base  string
}

func newCancelRig(t *testing.T, store func(dir string) string, cancelExtra string) *cancelRig {
	t.Helper()
	r := &cancelRig{t: t, prov: newCancelProvider(t), dir: t.TempDir()}
	r.cdir = filepath.Join(r.dir, "contracts")
	if err := os.Mkdir(r.cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	r.writeContract("1m", 5, cancelExtra)
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n  - {name: bob, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"), sum("bob-token"))
	if err := os.WriteFile(filepath.Join(r.dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	r.store = store(r.dir)
	r.args = []string{"serve", "--listen", "127.0.0.1:0", "--store", r.store, "--contracts", r.cdir, "--tokens", filepath.Join(r.dir, "tokens.yaml"),
		"--lease-slack", testLeaseSlack}
	r.start()
	return r
}

func (r *cancelRig) writeContract(extTime string, extRequests int, cancelExtra string) {
	r.t.Helper()
	c := fmt.Sprintf(`version: 1
name: cancel-test
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running, cancelling], success: [succeeded], failure: [failed], cancelled: [cancelled]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 2m, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
escalation: {extension: {time: %[2]s, status_requests: %[3]d}}
cancel: {url: "%[1]s/jobs/{job_id}/cancel"%[4]s}
`, r.prov.srv.URL, extTime, extRequests, cancelExtra)
	if err := os.WriteFile(filepath.Join(r.cdir, "cancel-test.yaml"), []byte(c), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *cancelRig) start() {
	r.t.Helper()
	r.p = start(r.t, r.args...)
	p := r.p
	r.t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	r.base = listenAddr(r.t, r.p)
}

// post sends a request and returns its status and decoded answer; it is
// safe to call from another goroutine (it never fails the test itself).
func (r *cancelRig) post(token, path, body string) (int, map[string]any) {
	req, _ := http.NewRequest("POST", r.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, map[string]any{"error": err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		m = map[string]any{"body": string(b)}
	}
	return resp.StatusCode, m
}

func (r *cancelRig) get(id string) map[string]any {
	r.t.Helper()
	return call(r.t, r.base, "alice-token", "GET", "/v1/operations/"+id, "", 200)
}

func (r *cancelRig) story(id string) string {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.base+"/v1/operations/"+id+"/audit", nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// until polls the record until cond holds: a plain read first, then
// long-polls, which hold their answer until the phase changes (on a record
// that already holds, one would only add its two seconds).
func (r *cancelRig) until(id, what string, cond func(op map[string]any) bool) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	op := call(r.t, r.base, "alice-token", "GET", "/v1/operations/"+id, "", 200)
	for !cond(op) {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; the record: %v\nthe story:\n%s", what, op, r.story(id))
		}
		op = call(r.t, r.base, "alice-token", "GET", "/v1/operations/"+id+"?wait=2s", "", 200)
	}
	return op
}

func (r *cancelRig) create(id, job string, maxRequests int) {
	r.t.Helper()
	call(r.t, r.base, "agent-token", "POST", "/v1/operations",
		fmt.Sprintf(`{"operation_id":%q,"contract":"cancel-test","job_id":%q,"max_status_requests":%d}`, id, job, maxRequests), 201)
}

func (r *cancelRig) arrived(job string) {
	r.t.Helper()
	select {
	case got := <-r.prov.arrived:
		if got != job {
			r.t.Fatalf("cancel arrived for %s, want %s", got, job)
		}
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no cancel arrived for %s", job)
	}
}

func cancelOf(op map[string]any) map[string]any {
	c, _ := op["cancel"].(map[string]any)
	return c
}

func phaseIs(phase string) func(map[string]any) bool {
	return func(op map[string]any) bool { return op["phase"] == phase }
}

func bothStores(t *testing.T, f func(t *testing.T, store func(string) string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, func(dir string) string { return filepath.Join(dir, "pw.db") }) })
	t.Run("postgres", func(t *testing.T) { f(t, func(string) string { return pgStore(t) }) })
}

// TestServeCancelThenExtend is the race found in review: an approver
// cancels an escalated operation and another extends it 0.5 s later,
// while the provider still holds the cancel call. The cancel is on the
// record (phase cancelling) before the provider answers, the extension
// adds to the observation without undoing it, polling goes on through the
// provider's "cancelling" until it reports "cancelled", and only that
// state decides the outcome.
func TestServeCancelThenExtend(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, store func(string) string) {
		r := newCancelRig(t, store, "")
		r.create("op-ext", "j-ext", 2)
		r.until("op-ext", "the escalation", phaseIs("escalated"))
		r.prov.holdCancels()
		cancelled := make(chan int, 1)
		go func() {
			code, _ := r.post("alice-token", "/v1/operations/op-ext/cancel", `{"note":"customer gave up"}`)
			cancelled <- code
		}()
		r.arrived("j-ext")
		// The provider holds the call: the record already says so.
		if op := r.get("op-ext"); op["phase"] != "cancelling" || cancelOf(op)["state"] != "recorded" {
			t.Fatalf("during the cancel call: phase %v, cancel %v", op["phase"], op["cancel"])
		}
		time.Sleep(500 * time.Millisecond) // the reported race: a second approver, half a second later
		extended := make(chan map[string]any, 1)
		go func() {
			code, op := r.post("bob-token", "/v1/operations/op-ext/decisions", `{"option":"extend","note":"keep watching"}`)
			op["http_status"] = float64(code)
			extended <- op
		}()
		r.prov.letGo()
		if code := <-cancelled; code != 200 {
			t.Fatalf("cancel answered %d", code)
		}
		if ext := <-extended; ext["http_status"] != float64(200) || ext["phase"] == "waiting" {
			t.Fatalf("extend while cancelling: %v", ext)
		}
		op := r.until("op-ext", "the provider's cancelled state", func(op map[string]any) bool { return op["phase"] != "cancelling" })
		cancels, _, after := r.prov.counts("j-ext")
		if op["phase"] != "cancelled" || op["outcome"] != "cancelled" || op["last_state"] != "cancelled" {
			t.Fatalf("outcome: %v", op)
		}
		if cancels != 1 || after < 3 {
			t.Fatalf("provider saw %d cancels and %d status requests after it; want 1 and the polling to go on until cancelled", cancels, after)
		}
		k := cancelOf(op)
		if k["state"] != "answered" || k["http_status"] != float64(200) || k["requested_by"].(map[string]any)["name"] != "alice" {
			t.Fatalf("cancel record: %v", k)
		}
		story := r.story("op-ext")
		for _, want := range []string{"alice (approver) decided cancel_at_provider: cancel at provider requested; recorded before it is sent",
			"cancel sent, provider answered 200", "bob (approver) decided extend: extended", "the cancel stands", "state cancelling → cancelled"} {
			if !strings.Contains(story, want) {
				t.Errorf("story lacks %q:\n%s", want, story)
			}
		}
	})
}

// TestServeTwoCancelsSendOne: two approvers cancel a waiting operation
// (no escalation needed) at once; the provider sees one cancel, and both
// answers show the one record. A later cancel sends nothing either.
func TestServeTwoCancelsSendOne(t *testing.T) {
	t.Parallel()
	r := newCancelRig(t, func(dir string) string { return filepath.Join(dir, "pw.db") }, "")
	r.create("op-two", "j-two", 10)
	r.prov.holdCancels()
	codes := make(chan int, 2)
	go func() { c, _ := r.post("alice-token", "/v1/operations/op-two/cancel", ""); codes <- c }()
	r.arrived("j-two")
	go func() {
		c, _ := r.post("bob-token", "/v1/operations/op-two/decisions", `{"option":"cancel_at_provider"}`)
		codes <- c
	}()
	time.Sleep(500 * time.Millisecond)
	r.prov.letGo()
	for range 2 {
		if c := <-codes; c != 200 {
			t.Fatalf("a cancel answered %d", c)
		}
	}
	r.until("op-two", "the provider's cancelled state", phaseIs("cancelled"))
	if code, _ := r.post("alice-token", "/v1/operations/op-two/cancel", ""); code != 200 {
		t.Fatalf("a cancel after the end answered %d", code)
	}
	if cancels, _, _ := r.prov.counts("j-two"); cancels != 1 {
		t.Fatalf("the provider saw %d cancel requests, want 1", cancels)
	}
	if k := cancelOf(r.get("op-two")); k["attempts"] != float64(1) {
		t.Fatalf("cancel record: %v", k)
	}
	if code, _ := r.post("agent-token", "/v1/operations/op-two/cancel", ""); code != http.StatusForbidden {
		t.Fatalf("an agent's cancel answered %d", code)
	}
}

// TestServeCancelThenAbandon: an abandon that arrives during the cancel
// call never closes the operation as failed. When the provider's answer
// to the cancel reports the job cancelled, the outcome is cancelled and
// the abandon finds nothing to decide; when it reports "cancelling", the
// abandon stops observing and the operation stays escalated with the
// cancel on its record.
func TestServeCancelThenAbandon(t *testing.T) {
	t.Parallel()
	r := newCancelRig(t, func(dir string) string { return filepath.Join(dir, "pw.db") }, "")
	for _, tc := range []struct {
		job, answer, phase string
		abandon            int
	}{
		{"j-done", "cancelled", "cancelled", http.StatusConflict},
		{"j-slow", "cancelling", "escalated", http.StatusOK},
	} {
		id := "op-" + tc.job
		r.prov.answerCancelWith(tc.job, tc.answer)
		r.create(id, tc.job, 2)
		r.until(id, "the escalation", phaseIs("escalated"))
		r.prov.holdCancels()
		cancelled := make(chan int, 1)
		go func() { c, _ := r.post("alice-token", "/v1/operations/"+id+"/cancel", ""); cancelled <- c }()
		r.arrived(tc.job)
		abandoned := make(chan int, 1)
		go func() {
			c, _ := r.post("bob-token", "/v1/operations/"+id+"/decisions", `{"option":"abandon"}`)
			abandoned <- c
		}()
		time.Sleep(500 * time.Millisecond)
		r.prov.letGo()
		if c := <-cancelled; c != 200 {
			t.Fatalf("%s: cancel answered %d", tc.job, c)
		}
		if c := <-abandoned; c != tc.abandon {
			t.Fatalf("%s: abandon answered %d, want %d", tc.job, c, tc.abandon)
		}
		op := r.get(id)
		if op["phase"] != tc.phase || cancelOf(op)["state"] != "answered" {
			t.Fatalf("%s: %v", tc.job, op)
		}
		if cancels, _, _ := r.prov.counts(tc.job); cancels != 1 {
			t.Fatalf("%s: %d cancels", tc.job, cancels)
		}
	}
	if story := r.story("op-j-slow"); !strings.Contains(story, "stays escalated, not failed") {
		t.Errorf("story:\n%s", story)
	}
}

// TestServeKilledDuringCancelCall: serve dies by SIGKILL while the
// provider holds the cancel call. The record already says a cancel was
// recorded and is not known to be sent; after a restart it is marked so,
// is not sent again (cancel is not documented as idempotent), and the
// operation goes on observing until the provider reports cancelled.
func TestServeKilledDuringCancelCall(t *testing.T) {
	t.Parallel()
	r := newCancelRig(t, func(dir string) string { return filepath.Join(dir, "pw.db") }, "")
	// A budget that outlasts the kill and the restart under -race, so the
	// observation goes on until the provider reports cancelled.
	path := filepath.Join(r.cdir, "cancel-test.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "max_status_requests: 10,", "max_status_requests: 100,", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload", func() bool { return strings.Contains(r.p.stderr.String(), "contracts reloaded") })
	r.create("op-kill", "j-kill", 100)
	r.prov.holdCancels()
	go r.post("alice-token", "/v1/operations/op-kill/cancel", "")
	r.arrived("j-kill")
	if err := r.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.p.cmd.Wait()

	show := start(t, "ops", "show", "op-kill", "--json", "--store", r.store)
	if code := show.exitCode(t); code != 0 {
		t.Fatalf("ops show: exit %d: %s", code, show.stderr.String())
	}
	var op map[string]any
	if err := json.Unmarshal(show.stdout.Bytes(), &op); err != nil {
		t.Fatal(err)
	}
	if op["phase"] != "cancelling" || cancelOf(op)["state"] != "recorded" {
		t.Fatalf("after the kill: phase %v, cancel %v", op["phase"], op["cancel"])
	}

	r.start()
	op = r.until("op-kill", "the restarted daemon to mark the cancel", func(op map[string]any) bool {
		return cancelOf(op)["state"] == "interrupted"
	})
	op = r.until("op-kill", "the provider's cancelled state", phaseIs("cancelled"))
	if cancels, _, _ := r.prov.counts("j-kill"); cancels != 1 {
		t.Fatalf("the provider saw %d cancel requests, want 1", cancels)
	}
	if story := r.story("op-kill"); !strings.Contains(story, "cancel recorded, not known to be sent") {
		t.Errorf("story:\n%s", story)
	}
	assertNoCanary(t, r.dir, r.p, show)
}

// TestServeDecisionAfterReloadUsesTheOperationsContract: a contract file
// changed under the daemon (SIGHUP) cannot grant an existing operation the
// new file's extension: the decision uses the contract the store keeps for
// the operation, and the new file reaches it only through an approver's
// use_current_contract, offered with what differs.
func TestServeDecisionAfterReloadUsesTheOperationsContract(t *testing.T) {
	t.Parallel()
	r := newCancelRig(t, func(dir string) string { return filepath.Join(dir, "pw.db") }, "")
	r.create("op-hup", "j-hup", 2)
	r.until("op-hup", "the escalation", phaseIs("escalated"))
	want := extendTo(t, r.get("op-hup"))
	r.writeContract("48h", 500, "")
	if err := r.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload", func() bool { return strings.Contains(r.p.stderr.String(), "contracts reloaded") })
	if !strings.Contains(fmt.Sprint(r.get("op-hup")), "use_current_contract") {
		t.Fatalf("the reloaded contract is not offered: %v", r.get("op-hup"))
	}
	code, ans := r.post("alice-token", "/v1/operations/op-hup/decisions", `{"option":"extend"}`)
	if code != http.StatusOK || ans["max_status_requests"] != want || want == float64(2+500) {
		t.Fatalf("extend after the reload: %d %v; want budget %v, the stored contract's extension", code, ans, want)
	}
}

// extendTo is the budget op's extend option would set.
func extendTo(t *testing.T, op map[string]any) any {
	t.Helper()
	e, _ := op["escalation"].(map[string]any)
	opts, _ := e["options"].([]any)
	for _, o := range opts {
		if m, _ := o.(map[string]any); m["id"] == "extend" {
			return m["new_max_status_requests"]
		}
	}
	t.Fatalf("no extend option: %v", op)
	return nil
}

// TestDecideWithLookAlikeContractIsRefused: `pollwarden decide --contract`
// with a file of the same name but a far larger extension is refused by
// the real CLI, and the budget stays as it was.
func TestDecideWithLookAlikeContractIsRefused(t *testing.T) {
	t.Parallel()
	prov := newCancelProvider(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "pw.db")
	real := contractFile(t, dir, prov.srv.URL)
	w := start(t, "wait", "--contract", real, "--job-id", "j-look", "--operation-id", "op-look",
		"--max-requests", "1", "--store", db, "--json", "--quiet")
	if code := w.exitCode(t); code != 21 {
		t.Fatalf("wait: exit %d, want 21: %s", code, w.stderr.String())
	}
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	look := filepath.Join(dir, "lookalike.yaml")
	// The review's look-alike asked for 100000h and 1000000 requests; the
	// values stay within any bound a contract may have, so that only the
	// look-alike itself is what gets it refused.
	src := string(b) + "escalation: {extension: {time: 48h, status_requests: 500}}\n"
	if err := os.WriteFile(look, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, "decide", "op-look", "extend", "--contract", look, "--by", "mallory", "--store", db)
	if code := d.exitCode(t); code != 2 || !strings.Contains(d.stderr.String(), "escalation.extension changed") {
		t.Fatalf("decide with a look-alike: exit %d, stderr %s, stdout %s", code, d.stderr.String(), d.stdout.String())
	}
	show := start(t, "ops", "show", "op-look", "--json", "--store", db)
	if code := show.exitCode(t); code != 0 {
		t.Fatalf("ops show: %d %s", code, show.stderr.String())
	}
	var op map[string]any
	if err := json.Unmarshal(show.stdout.Bytes(), &op); err != nil {
		t.Fatal(err)
	}
	if op["max_status_requests"] != float64(1) || op["phase"] != "escalated" {
		t.Fatalf("the look-alike changed the record: %v", op)
	}
	ok := start(t, "decide", "op-look", "extend", "--contract", real, "--by", "alice", "--store", db)
	if code := ok.exitCode(t); code != 0 {
		t.Fatalf("decide with the real contract: exit %d: %s", code, ok.stderr.String())
	}
}
