package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
)

var testSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("dispatcher-test-secret-32-bytes!"))

// clock is a manual clock: the tests move time, nothing sleeps.
type clock struct {
	pollwarden.WallTimers
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Sleep waits on the wall clock: only Run sleeps, between ticks.
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	return pollwarden.RealClock{}.Sleep(ctx, d)
}
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// hit is one request a receiver saw.
type hit struct {
	id, ts, sig string
	body        []byte
	valid       bool
}

// receiver is a real HTTP server on loopback answering with the codes of
// answer (then 200), checking every signature with the independent verify.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	hits   []hit
	answer func(n int) (int, http.Header)
}

func newReceiver(t *testing.T, answer func(n int) (int, http.Header)) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h := hit{id: req.Header.Get(HeaderID), ts: req.Header.Get(HeaderTimestamp), sig: req.Header.Get(HeaderSignature), body: b}
		h.valid = req.Method == http.MethodPost && req.Header.Get("Content-Type") == "application/json" &&
			verify(testSecret, h.id, h.ts, b, h.sig)
		r.mu.Lock()
		r.hits = append(r.hits, h)
		n := len(r.hits)
		r.mu.Unlock()
		code, hdr := 200, http.Header(nil)
		if r.answer != nil {
			code, hdr = r.answer(n)
		}
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hit(nil), r.hits...)
}

// store is what the dispatcher needs from a store driver.
type store interface {
	pollwarden.Store
	pollwarden.Outbox
}

type fixture struct {
	st    store
	clk   *clock
	cfg   *Config
	count map[string]int
	mu    sync.Mutex
}

func newFixture(t *testing.T, url string, retry Retry) *fixture {
	t.Helper()
	return newFixtureOn(t, openSQLite(t, sqlite.Options{}), url, retry)
}

func openSQLite(t *testing.T, opts sqlite.Options) store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "pw.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newFixtureOn(t *testing.T, st store, url string, retry Retry) *fixture {
	t.Helper()
	return &fixture{st: st, clk: &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}, count: map[string]int{},
		cfg: &Config{Endpoints: []Endpoint{{Name: "ops", URL: url, Secret: "env:WH", Events: []string{ClassEscalated, ClassFinal}}},
			Retry: retry, Timeout: 5 * time.Second}}
}

func (f *fixture) dispatcher(t *testing.T, owner string) *Dispatcher {
	t.Helper()
	d, err := New(Options{Store: f.st, Outbox: f.st, Config: f.cfg, Owner: owner, Clock: f.clk,
		Rand: rand.New(rand.NewPCG(1, 2)), Observer: f,
		Resolve: func(ref string) (string, error) {
			if ref != "env:WH" {
				return "", errors.New("credential " + ref + " is not set")
			}
			return testSecret, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WebhookAttempt implements Observer.
func (f *fixture) WebhookAttempt(endpoint, result string) {
	f.mu.Lock()
	f.count[endpoint+"/"+result]++
	f.mu.Unlock()
}

func (f *fixture) tick(t *testing.T, d *Dispatcher) int {
	t.Helper()
	n, err := d.Tick(t.Context())
	if err != nil {
		t.Fatalf("Tick: %v", err)
	}
	return n
}

// create stores a waiting operation with its submitted event.
func (f *fixture) create(t *testing.T, id string) *pollwarden.Operation {
	t.Helper()
	now := f.clk.Now()
	op := &pollwarden.Operation{ID: id, Contract: "c", ProviderJobID: "job-" + id, StatusURL: "https://api.example/jobs/" + id,
		Fingerprint: "fp", StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, Phase: pollwarden.PhaseWaiting,
		MaxStatusRequests: 4, MaxTransportFailures: 3, MaxRateLimited: 3, CredentialName: "env:TOKEN"}
	if err := f.st.OperationCreate(t.Context(), op, []pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
		t.Fatal(err)
	}
	return op
}

// move saves op in phase p with one event of kind k.
func (f *fixture) move(t *testing.T, op *pollwarden.Operation, p pollwarden.Phase, k pollwarden.EventKind) {
	t.Helper()
	op.Phase = p
	if p == pollwarden.PhaseEscalated {
		op.Reason = pollwarden.ReasonRequestBudgetExhausted
	}
	err := f.st.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: f.clk.Now(),
		Events: []pollwarden.Event{{At: f.clk.Now(), Kind: k}}})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) outbox(t *testing.T, s pollwarden.OutboxStatus) []pollwarden.OutboxMessage {
	t.Helper()
	ms, err := f.st.OutboxList(t.Context(), pollwarden.OutboxListParams{Status: s})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

var fast = Retry{Base: time.Second, Max: 4 * time.Second, Attempts: 10}

// A receiver that fails twice, then accepts: three attempts of the same
// message, each with the same webhook-id and body, a fresh timestamp and a
// valid signature; then delivered and never sent again.
func TestDeliverAfterTwoFailures(t *testing.T) {
	r := newReceiver(t, func(n int) (int, http.Header) {
		if n <= 2 {
			return 503, nil
		}
		return 204, nil
	})
	f := newFixture(t, r.URL, fast)
	d := f.dispatcher(t, "a")
	f.tick(t, d) // starts the cursor at the (empty) audit head
	op := f.create(t, "op1")
	f.move(t, op, pollwarden.PhaseEscalated, pollwarden.EventEscalated)
	for range 3 {
		if n := f.tick(t, d); n != 1 {
			t.Fatalf("attempted %d messages, want 1", n)
		}
		f.clk.Add(fast.Max) // past any jittered delay
	}
	if n := f.tick(t, d); n != 0 {
		t.Fatalf("a delivered message was attempted again (%d)", n)
	}
	hits := r.got()
	if len(hits) != 3 {
		t.Fatalf("receiver saw %d requests, want 3", len(hits))
	}
	for i, h := range hits {
		if !h.valid || h.id != hits[0].id || string(h.body) != string(hits[0].body) {
			t.Fatalf("attempt %d: %+v, first %+v", i+1, h, hits[0])
		}
	}
	if hits[0].ts == hits[2].ts {
		t.Error("every attempt carried the first attempt's timestamp")
	}
	var b struct {
		Type string
		Data map[string]any
	}
	if err := json.Unmarshal(hits[0].body, &b); err != nil || b.Type != "operation.escalated" ||
		b.Data["operation_id"] != "op1" || b.Data["reason"] != "request_budget_exhausted" || b.Data["credential_name"] != "env:TOKEN" {
		t.Fatalf("body %s: %v", hits[0].body, err)
	}
	del := f.outbox(t, pollwarden.OutboxDelivered)
	if len(del) != 1 || del[0].Attempts != 3 || del[0].ID != hits[0].id || del[0].LastStatus != 204 {
		t.Fatalf("outbox %+v", del)
	}
	if f.count["ops/retry"] != 2 || f.count["ops/delivered"] != 1 {
		t.Fatalf("observed %v", f.count)
	}
}

// Retry-After is a minimum: with a 1 s base, a 503 asking for an hour
// schedules the next attempt an hour later, not a second.
func TestRetryAfterHonoured(t *testing.T) {
	r := newReceiver(t, func(int) (int, http.Header) { return 503, http.Header{"Retry-After": {"3600"}} })
	f := newFixture(t, r.URL, fast)
	d := f.dispatcher(t, "a")
	f.tick(t, d)
	f.move(t, f.create(t, "op1"), pollwarden.PhaseSucceeded, pollwarden.EventSucceeded)
	start := f.clk.Now()
	f.tick(t, d)
	p := f.outbox(t, pollwarden.OutboxPending)
	if len(p) != 1 || p[0].NextAttemptAt.Before(start.Add(time.Hour)) || p[0].LastStatus != 503 || p[0].LastError != "HTTP 503" {
		t.Fatalf("after a 503 with Retry-After 3600: %+v", p)
	}
	f.clk.Add(59 * time.Minute)
	if n := f.tick(t, d); n != 0 {
		t.Fatal("attempted again before Retry-After passed")
	}
	f.clk.Add(time.Minute)
	if n := f.tick(t, d); n != 1 {
		t.Fatal("not attempted once Retry-After passed")
	}
}

// The jittered delay stays in [50%, 100%] of the exponential raw delay.
func TestDelayJitterBounds(t *testing.T) {
	f := newFixture(t, "http://127.0.0.1:1", Retry{Base: time.Second, Max: 8 * time.Second, Attempts: 10})
	d := f.dispatcher(t, "a")
	for n, raw := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 8 * time.Second, 200: 8 * time.Second} {
		for range 50 {
			if w := d.delay(n, 0); w < raw/2 || w > raw {
				t.Fatalf("delay after attempt %d: %v, want in [%v, %v]", n, w, raw/2, raw)
			}
		}
	}
	if w := d.delay(1, 48*time.Hour); w != maxRetryAfter {
		t.Fatalf("a two-day Retry-After gave %v, want the %v cap", w, maxRetryAfter)
	}
}

// After Attempts failed attempts the message is dead: recorded, counted,
// never claimed again.
func TestDeadAfterBound(t *testing.T) {
	r := newReceiver(t, func(int) (int, http.Header) { return 500, nil })
	f := newFixture(t, r.URL, Retry{Base: time.Second, Max: time.Second, Attempts: 3})
	d := f.dispatcher(t, "a")
	f.tick(t, d)
	f.move(t, f.create(t, "op1"), pollwarden.PhaseFailed, pollwarden.EventFinished)
	for range 5 {
		f.tick(t, d)
		f.clk.Add(time.Hour)
	}
	dead := f.outbox(t, pollwarden.OutboxDead)
	if len(r.got()) != 3 || len(dead) != 1 || dead[0].Attempts != 3 || dead[0].Type != "operation.failed" || dead[0].SettledAt == nil {
		t.Fatalf("receiver saw %d; dead %+v", len(r.got()), dead)
	}
	if f.count["ops/dead"] != 1 || f.count["ops/retry"] != 2 {
		t.Fatalf("observed %v", f.count)
	}
}

// Events before the first run are not replayed; afterwards, each
// escalation is a message and the final outcome exactly one, whichever
// event reached it; an endpoint gets only the classes it asked for.
func TestWhatIsSent(t *testing.T) {
	t.Run("plain", func(t *testing.T) { whatIsSent(t, openSQLite(t, sqlite.Options{})) })
	// A sealed store: the dispatcher reads raw events and records, never
	// a payload, so it needs no key; here it runs with the key, as serve
	// does when given --audit-key.
	t.Run("sealed", func(t *testing.T) {
		k, err := audit.NewSealKey(bytes.Repeat([]byte{7}, audit.SealKeySize))
		if err != nil {
			t.Fatal(err)
		}
		whatIsSent(t, openSQLite(t, sqlite.Options{Sealer: k}))
	})
}

func whatIsSent(t *testing.T, st store) {
	r := newReceiver(t, nil)
	f := newFixtureOn(t, st, r.URL, fast)
	f.cfg.Endpoints = append(f.cfg.Endpoints, Endpoint{Name: "final-only", URL: r.URL + "/final", Secret: "env:WH", Events: []string{ClassFinal}})
	old := f.create(t, "before")
	f.move(t, old, pollwarden.PhaseEscalated, pollwarden.EventEscalated)
	d := f.dispatcher(t, "a")
	for range 2 { // Init is idempotent
		if err := d.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	head, _, _ := f.st.AuditHead(t.Context())
	if cur, err := f.st.OutboxCursor(t.Context()); err != nil || cur != head || head == 0 {
		t.Fatalf("after Init the cursor is %d (%v), want the audit head %d", cur, err, head)
	}
	f.tick(t, d)
	if n := len(f.outbox(t, "")); n != 0 {
		t.Fatalf("%d messages for history from before the first run", n)
	}

	op := f.create(t, "twice")
	f.move(t, op, pollwarden.PhaseEscalated, pollwarden.EventEscalated)
	f.move(t, op, pollwarden.PhaseWaiting, pollwarden.EventDecision) // extended
	f.move(t, op, pollwarden.PhaseEscalated, pollwarden.EventEscalated)
	f.move(t, op, pollwarden.PhaseFailed, pollwarden.EventDecision) // abandoned
	f.move(t, op, pollwarden.PhaseFailed, pollwarden.EventAction)   // a later action on the closed operation
	ok := f.create(t, "ok")
	f.move(t, ok, pollwarden.PhaseSucceeded, pollwarden.EventSucceeded)
	f.tick(t, d)
	f.tick(t, d)

	got := map[string]int{}
	for _, m := range f.outbox(t, pollwarden.OutboxDelivered) {
		got[m.Endpoint+" "+m.OperationID+" "+m.Type]++
	}
	want := map[string]int{
		"ops twice operation.escalated": 2, "ops twice operation.failed": 1, "ops ok operation.succeeded": 1,
		"final-only twice operation.failed": 1, "final-only ok operation.succeeded": 1,
	}
	if len(got) != len(want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("delivered %v, want %v", got, want)
		}
	}
	for _, h := range r.got() {
		if !h.valid {
			t.Fatalf("invalid signature on %s", h.body)
		}
	}
}

// Two dispatchers (two replicas) on one store: every message is enqueued
// once and delivered once.
func TestTwoDispatchersDeliverOnce(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { twoDispatchers(t, openSQLite(t, sqlite.Options{})) })
	t.Run("postgres", func(t *testing.T) { twoDispatchers(t, openPostgres(t)) })
}

func twoDispatchers(t *testing.T, st store) {
	r := newReceiver(t, nil)
	f := newFixtureOn(t, st, r.URL, fast)
	a, b := f.dispatcher(t, "a"), f.dispatcher(t, "b")
	f.tick(t, a)
	for i := range 20 {
		op := f.create(t, "op"+strconv.Itoa(i))
		f.move(t, op, pollwarden.PhaseEscalated, pollwarden.EventEscalated)
	}
	var wg sync.WaitGroup
	for _, d := range []*Dispatcher{a, b} {
		wg.Go(func() {
			for range 4 {
				if _, err := d.Tick(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, h := range r.got() {
		seen[h.id]++
	}
	if len(seen) != 20 || len(r.got()) != 20 {
		t.Fatalf("%d requests for %d distinct messages, want 20 and 20", len(r.got()), len(seen))
	}
}

// A secret that cannot be resolved fails the attempt (and is retried)
// without leaking into the stored error.
func TestUnresolvableSecretRetries(t *testing.T) {
	r := newReceiver(t, nil)
	f := newFixture(t, r.URL, fast)
	f.cfg.Endpoints[0].Secret = "env:MISSING"
	d := f.dispatcher(t, "a")
	f.tick(t, d)
	f.move(t, f.create(t, "op1"), pollwarden.PhaseSucceeded, pollwarden.EventSucceeded)
	f.tick(t, d)
	p := f.outbox(t, pollwarden.OutboxPending)
	if len(r.got()) != 0 || len(p) != 1 || p[0].LastError != "signing secret: credential env:MISSING is not set" {
		t.Fatalf("sent %d; pending %+v", len(r.got()), p)
	}
}

// Stopping lets an attempt in flight finish and records its result: a
// message the receiver accepted is not sent again after a restart.
func TestStopFinishesAttemptInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	r := newReceiver(t, func(n int) (int, http.Header) {
		if n == 1 {
			close(entered)
		}
		<-release
		return 200, nil
	})
	f := newFixture(t, r.URL, fast)
	d := f.dispatcher(t, "a")
	if err := d.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.move(t, f.create(t, "op1"), pollwarden.PhaseSucceeded, pollwarden.EventSucceeded)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-entered
	cancel()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if del := f.outbox(t, pollwarden.OutboxDelivered); len(del) != 1 || len(r.got()) != 1 {
		t.Fatalf("after a stop mid-attempt: delivered %+v, receiver saw %d", del, len(r.got()))
	}
}
