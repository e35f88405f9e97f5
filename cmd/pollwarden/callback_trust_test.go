package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// batchProvider is a fake OpenAI Batch API fed with OpenAI's own bodies
// (contract/builtin/testdata/openai-batch): a batch runs for its set
// duration, then completes, and the provider calls the daemon back the way
// OpenAI's batch webhooks do (a Standard Webhooks-signed batch.completed
// event) according to the batch's delivery: on time, twice, late, never,
// or preceded by a forged one.
type batchProvider struct {
	t        *testing.T
	srv      *httptest.Server
	callback string // the daemon's callback URL, set once it listens
	running  []byte
	done     []byte

	mu       sync.Mutex
	jobs     map[string]*batch
	refused  int // forged callbacks the daemon answered 401
	answered map[int]int
	timers   []*time.Timer
}

type delivery int

const (
	onTime delivery = iota
	twice
	late
	lost
	forgedFirst
)

type batch struct {
	endsAt   time.Time
	delivery delivery
	requests int
	at       []time.Time // when each status request arrived
}

// callbackDelay is how long after a batch's end its callback is sent;
// lateDelay that of a late one, after any poll would have seen the end.
const (
	callbackDelay = 50 * time.Millisecond
	lateDelay     = 1500 * time.Millisecond
)

func newBatchProvider(t *testing.T) *batchProvider {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "contract", "builtin", "testdata", "openai-batch", name))
		if err != nil {
			t.Fatal(err)
		}
		// The fixtures' expires_at is in 2024: a batch still running past it
		// would be escalated, so it moves a day ahead of now.
		return bytes.ReplaceAll(b, []byte("1711557933"), fmt.Appendf(nil, "%d", time.Now().Add(24*time.Hour).Unix()))
	}
	p := &batchProvider{t: t, running: read("running.json"), done: read("succeeded.json"),
		jobs: map[string]*batch{}, answered: map[int]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.mu.Lock()
		for _, tm := range p.timers {
			tm.Stop()
		}
		p.mu.Unlock()
		p.srv.Close()
	})
	return p
}

func (p *batchProvider) serve(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/batches/")
	p.mu.Lock()
	b := p.jobs[id]
	if b != nil {
		b.requests++
		b.at = append(b.at, time.Now())
	}
	p.mu.Unlock()
	if b == nil {
		http.NotFound(w, r)
		return
	}
	body := p.running
	if !time.Now().Before(b.endsAt) {
		body = p.done
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(bytes.ReplaceAll(body, []byte("batch_abc123"), []byte(id)))
}

// start registers batch id, running for d, and schedules its callbacks.
func (p *batchProvider) start(id string, d time.Duration, how delivery) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jobs[id] = &batch{endsAt: time.Now().Add(d), delivery: how}
	after := func(d time.Duration, f func()) { p.timers = append(p.timers, time.AfterFunc(d, f)) }
	switch how {
	case onTime:
		after(d+callbackDelay, func() { p.send(id, "evt_"+id, cbCanaryKey) })
	case twice:
		after(d+callbackDelay, func() { p.send(id, "evt_"+id, cbCanaryKey) })
		after(d+2*callbackDelay, func() { p.send(id, "evt_"+id, cbCanaryKey) })
	case late:
		after(d+lateDelay, func() { p.send(id, "evt_"+id, cbCanaryKey) })
	case forgedFirst:
		after(d/2, func() { p.send(id, "evt_forged_"+id, "not-the-signing-key-0000000") })
		after(d+callbackDelay, func() { p.send(id, "evt_"+id, cbCanaryKey) })
	}
}

// send posts OpenAI's batch.completed event for id, signed with key.
func (p *batchProvider) send(id, msgID, key string) {
	ts := time.Now().Unix()
	body := fmt.Sprintf(`{"object":"event","id":%q,"type":"batch.completed","created_at":%d,"data":{"id":%q}}`, msgID, ts, id)
	req, _ := http.NewRequest("POST", p.callback, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", fmt.Sprint(ts))
	req.Header.Set("webhook-signature", cbSign(key, msgID, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return // the daemon is stopping: the test is over
	}
	resp.Body.Close()
	p.mu.Lock()
	p.answered[resp.StatusCode]++
	p.mu.Unlock()
}

// answeredWith is how many callbacks the daemon has answered with code.
func (p *batchProvider) answeredWith(code int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered[code]
}

// shortGaps is how many of batch id's status requests came less than
// least after the one before.
func (p *batchProvider) shortGaps(id string, least time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	at := p.jobs[id].at
	for i := 1; i < len(at); i++ {
		if at[i].Sub(at[i-1]) < least {
			n++
		}
	}
	return n
}

func (p *batchProvider) requests(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jobs[id].requests
}

// batchContract is an openai-batch contract scaled down to test time:
// backoff 100 ms to 500 ms, so the safety net while callbacks are trusted
// (4 × max × the operation's factor, 0.5–0.7) is 1–1.4 s.
func batchContract(name, url string, callbacks bool) string {
	c := fmt.Sprintf(`version: 1
name: %s
status:
  url: "%s/v1/batches/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state:
  path: status
  pending: [validating, in_progress, finalizing, cancelling]
  success: [completed]
  failure: [failed]
result: {require: [{path: output_file_id, kind: string}], error_path: errors}
hints:
  job_expires_at: {path: expires_at, unit: unix_seconds}
backoff: {base: 100ms, max: 500ms}
limits: {deadline: 1h, max_status_requests: 200, max_transport_failures: 3, max_rate_limited: 3}
`, name, url)
	if callbacks {
		c += `callback:
  verify: standard-webhooks
  secret: env:PW_CB_SECRET
  job_id_path: data.id
  event_filter: "type == 'batch.completed'"
`
	}
	return c
}

// TestServeTrustedCallbacksSavePolls runs a serve process against a fake
// OpenAI Batch provider that calls back when each batch completes. Until
// the callbacks have proved themselves the daemon polls as without them;
// once they have, a running batch is polled only at the safety net and its
// callback wakes the one request that sees it end, so a batch costs a
// fraction of the requests of the same batch on a contract without
// callbacks. Duplicated, late and forged callbacks (401) change nothing but
// latency; lost ones are found by the safety net, and enough of them drop
// the trust, after which the daemon polls as without callbacks again.
// Every batch ends with the provider's answer.
func TestServeTrustedCallbacksSavePolls(t *testing.T) {
	t.Parallel()
	prov := newBatchProvider(t)
	dir, p, base := serveContracts(t, []string{"PW_CB_SECRET=" + cbCanary}, map[string]string{
		"batch-cb.yaml":    batchContract("batch-cb", prov.srv.URL, true),
		"batch-plain.yaml": batchContract("batch-plain", prov.srv.URL, false),
	})
	prov.callback = base + "/v1/callbacks/batch-cb"

	run := func(contract, prefix string, n int, d time.Duration, how func(i int) delivery) []string {
		t.Helper()
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("batch_%s_%d", prefix, i)
			prov.start(ids[i], d, how(i))
			call(t, base, "agent-token", "POST", "/v1/operations",
				fmt.Sprintf(`{"operation_id":"op-%s","contract":%q,"job_id":%q}`, ids[i], contract, ids[i]), 201)
		}
		for _, id := range ids {
			if op := waitPhase(t, base, "op-"+id, "succeeded"); !strings.Contains(fmt.Sprint(op["result"]), "file-cvaTdG") {
				t.Fatalf("%s: result %v, want the provider's output file", id, op["result"])
			}
		}
		return ids
	}
	safetyNet := func(id string) int {
		n := 0
		for _, e := range auditEvents(t, base, "op-"+id) {
			if strings.Contains(e.Data.Detail, "safety-net poll") {
				n++
			}
		}
		return n
	}
	callbacks := func(id string) int { return countSource(auditEvents(t, base, "op-"+id), "provider_callback") }

	// Learning: 20 short batches, half called back on time, half late
	// (after a poll saw the end). Untrusted, nothing is held.
	learn := run("batch-cb", "learn", 20, 500*time.Millisecond, func(i int) delivery { return []delivery{onTime, late}[i%2] })
	for _, id := range learn {
		if n := safetyNet(id); n != 0 {
			t.Fatalf("%s: %d safety-net polls before the callbacks were trusted, want 0", id, n)
		}
	}
	// The late callbacks arrive and count: the daemon has answered all
	// 20 of the learning batches' callbacks.
	waitForWithin(t, time.Minute, "the learning batches' 20 callbacks to be answered", func() bool {
		return prov.answeredWith(http.StatusAccepted) >= len(learn)
	})

	// Trusted: 2 s batches, called back on time, twice, or after a forged
	// callback; beside them the same batches on the contract without
	// callbacks, polled every 50–500 ms.
	const runFor = 2 * time.Second
	var plain []string
	var plainDone sync.WaitGroup
	plainDone.Go(func() { plain = run("batch-plain", "plain", 6, runFor, func(int) delivery { return lost }) })
	trusted := run("batch-cb", "trusted", 6, runFor, func(i int) delivery { return []delivery{onTime, twice, forgedFirst}[i%3] })
	plainDone.Wait()
	// While callbacks are trusted a running batch is polled only at the
	// safety net, at least 4 × 500 ms × 0.5 = 1 s after the answer before
	// (the daemon schedules from the answer, so a loaded machine only
	// lengthens the gaps); the one request a callback wakes may come
	// sooner. Gaps are measured rather than requests counted: how many
	// safety-net polls fit in a batch depends on how fast the machine is.
	const safetyNetGap = 900 * time.Millisecond // 1 s less the jitter of the provider's own clock reads
	woken, sumTrusted, sumPlain := 0, 0, 0
	for i, id := range trusted {
		sumTrusted += prov.requests(id)
		sumPlain += prov.requests(plain[i])
		c := callbacks(id)
		woken += c
		if g := prov.shortGaps(id, safetyNetGap); g > c {
			t.Errorf("%s: %d status requests came within %v of the one before and %d callback woke a request: "+
				"trusted callbacks should leave only the safety net and the woken request", id, g, safetyNetGap, c)
		}
		if safetyNet(id) == 0 {
			t.Errorf("%s: no safety-net poll while callbacks are trusted", id)
		}
		// A callback arriving after a safety-net poll already saw the end
		// wakes nothing (a loaded machine can delay it that long); one
		// arriving twice, or a forged one, never wakes a second request.
		if c > 1 {
			t.Errorf("%s: %d callback wake-ups, want at most 1 (duplicates and forged ones wake nothing)", id, c)
		}
	}
	if woken == 0 {
		t.Error("no callback woke a request for any of the 6 trusted batches")
	}
	t.Logf("status requests for 6 batches of %s: %d with trusted callbacks (%d woken by a callback), %d without callbacks",
		runFor, sumTrusted, woken, sumPlain)
	// The gap rule tells trusted callbacks apart: without them the same
	// batches are polled at 50–500 ms.
	plainShort := 0
	for _, id := range plain {
		plainShort += prov.shortGaps(id, safetyNetGap)
	}
	if plainShort == 0 {
		t.Errorf("no two status requests within %v for 6 batches on the contract without callbacks: the gap rule shows nothing", safetyNetGap)
	}
	waitForWithin(t, time.Minute, "the 2 forged callbacks to be answered", func() bool { return prov.answeredWith(http.StatusUnauthorized) >= 2 })
	if refused := prov.answeredWith(http.StatusUnauthorized); refused != 2 {
		t.Errorf("%d forged callbacks answered 401, want 2", refused)
	}

	// Lost: 10 batches whose callbacks never come are seen at the safety
	// net, and the silent ends drop the trust.
	lostIDs := run("batch-cb", "lost", 10, 500*time.Millisecond, func(int) delivery { return lost })
	for _, id := range lostIDs {
		if c := callbacks(id); c != 0 {
			t.Errorf("%s: %d callback wake-ups for a batch whose callback was lost", id, c)
		}
	}
	// Untrusted again: new batches are polled as without callbacks, and
	// their callbacks still wake the poll that sees them end.
	after := run("batch-cb", "after", 4, runFor, func(int) delivery { return onTime })
	for _, id := range after {
		if n := safetyNet(id); n != 0 {
			t.Errorf("%s: %d safety-net polls after lost callbacks dropped the trust, want 0", id, n)
		}
	}
	assertNoCanary(t, dir, p)
}

// serveContracts starts serve on a fresh SQLite store with the given
// contract files and one agent token ("agent-token"); the process is
// killed when the test ends.
func serveContracts(t *testing.T, env []string, contracts map[string]string) (dir string, p *proc, base string) {
	t.Helper()
	dir = t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range contracts {
		if err := os.WriteFile(filepath.Join(cdir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startEnv(t, env, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return dir, p, listenAddr(t, p)
}
