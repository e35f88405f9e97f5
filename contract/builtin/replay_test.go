package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// scenario is one replay: the fixture bodies the fake provider answers
// with, in order (the last repeats), and what pollwarden must conclude.
type scenario struct {
	name    string
	bodies  []string // fixture names, without .json
	jobID   string
	vars    map[string]string
	start   time.Time // the fake clock's start: near the fixtures' own dates
	outcome pollwarden.Phase
	reason  pollwarden.Reason
	result  map[string]any // fields the result must hold, exactly
	// providerState, when set, is the provider's own value the record
	// must keep next to the mapped state.
	providerState string
	// resultHas, when set, must be in the recorded result's JSON.
	resultHas string
	// providerError, when set, must be in the kept provider error.
	providerError string
	story         string // a story line must contain this
	path          string // the path (and query) every request must have, when set
	// contract, when set, is the whole contract to replay instead of an
	// extension of the built-in; %s is the fake provider's URL.
	contract string
	// body, when set, is the JSON body every request must carry.
	body string
	// extra is YAML merged into the test's extending contract (after
	// base_url), e.g. to lower a limit.
	extra string
}

// answer is one fixture: its body and the status and headers of its
// .meta.json sidecar (200 and JSON without one).
type answer struct {
	status int
	header map[string]string
	body   []byte
}

func loadAnswer(t *testing.T, dir, name string) answer {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: 200, header: map[string]string{"Content-Type": "application/json"}, body: body}
	if meta, err := os.ReadFile(filepath.Join(dir, name+".meta.json")); err == nil {
		var m struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
		}
		if err := json.Unmarshal(meta, &m); err != nil {
			t.Fatalf("%s.meta.json: %v", name, err)
		}
		a.status = m.Status
		for k, v := range m.Headers {
			a.header[k] = v
		}
	}
	return a
}

// fakeProvider serves the scenario's fixtures on loopback, one per
// request, and records each request's method and path.
type fakeProvider struct {
	mu       sync.Mutex
	answers  []answer
	next     int
	requests []*http.Request
	bodies   []string
	// session, when set, is the session id the fake hands out to an MCP
	// initialize (see mcpHandshake); handshakes counts them, and
	// sessionless the other requests that did not carry it.
	session                 string
	handshakes, sessionless int
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	if r.Body != nil {
		buf := make([]byte, 4096)
		n, _ := r.Body.Read(buf)
		b.Write(buf[:n])
	}
	f.mu.Lock()
	if f.session != "" && f.mcpHandshake(w, r, b.String()) {
		f.mu.Unlock()
		return
	}
	a := f.answers[min(f.next, len(f.answers)-1)]
	f.next++
	f.requests = append(f.requests, r.Clone(context.Background()))
	f.bodies = append(f.bodies, b.String())
	f.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if len(a.body) == 0 {
		w.Header().Del("Content-Type")
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

type fakeClock struct {
	pollwarden.WallTimers
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

const replayToken = "replay-canary-token"

// replay runs one scenario of built-in name through the real controller,
// prober and SQLite store, against a loopback fake provider serving the
// fixtures, with the contract moved there by base_url in an extending
// file, as a user would.
func replay(t *testing.T, name string, sc scenario) (*pollwarden.Operation, *fakeProvider) {
	t.Helper()
	dir := filepath.Join("testdata", name)
	fake := &fakeProvider{}
	for _, b := range sc.bodies {
		fake.answers = append(fake.answers, loadAnswer(t, dir, b))
	}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	src := fmt.Sprintf("version: 1\nextends: %s\nname: %s\nbase_url: %q\n%s", name, name, srv.URL, sc.extra)
	if sc.contract != "" {
		src = fmt.Sprintf(sc.contract, srv.URL)
	}
	c, err := contract.Parse([]byte(src))
	if err != nil {
		t.Fatalf("extending %s: %v", name, err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Session != nil {
		fake.session = "session-" + sc.name
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	start := sc.start
	if start.IsZero() {
		start = time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)
	}
	clock := &fakeClock{now: start}
	getenv := func(string) (string, bool) { return replayToken, true }
	readFile := func(string) ([]byte, error) { return []byte(replayToken + "\n"), nil }
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv, ReadFile: readFile})})
	job := sc.jobID
	if job == "" {
		job = "job-1"
	}
	vars, err := contract.OperationVars(c, sc.vars, false)
	if err != nil {
		t.Fatal(err)
	}
	op, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: "op-" + sc.name, ProviderJobID: job, Vars: vars})
	if err != nil {
		t.Fatal(err)
	}
	final, err := ctl.Wait(context.Background(), ex, op.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := st.EventList(context.Background(), op.ID)
	if err != nil {
		t.Fatal(err)
	}
	story := audit.Story(events, time.UTC)
	if final.Phase != sc.outcome || final.Reason != sc.reason {
		t.Errorf("outcome %s/%s, want %s/%s\n%s", final.Phase, final.Reason, sc.outcome, sc.reason, strings.Join(story, "\n"))
	}
	if sc.result != nil {
		var got map[string]any
		if err := json.Unmarshal(final.Result, &got); err != nil {
			t.Errorf("result %s: %v", final.Result, err)
		}
		for k, want := range sc.result {
			if fmt.Sprint(got[k]) != fmt.Sprint(want) {
				t.Errorf("result[%s] = %v, want %v (result %s)", k, got[k], want, final.Result)
			}
		}
	}
	if sc.providerState != "" && final.LastProviderState != sc.providerState {
		t.Errorf("record keeps provider state %q, want %q (mapped %q)", final.LastProviderState, sc.providerState, final.LastState)
	}
	if sc.resultHas != "" && !strings.Contains(string(final.Result), sc.resultHas) {
		t.Errorf("result %s lacks %q", final.Result, sc.resultHas)
	}
	if sc.providerError != "" && !strings.Contains(string(final.ProviderError), sc.providerError) {
		t.Errorf("provider error %s lacks %q", final.ProviderError, sc.providerError)
	}
	if sc.story != "" && !slices.ContainsFunc(story, func(l string) bool { return strings.Contains(l, sc.story) }) {
		t.Errorf("no story line contains %q:\n%s", sc.story, strings.Join(story, "\n"))
	}
	for _, l := range story {
		if strings.Contains(l, replayToken) {
			t.Fatalf("the credential reached the story: %s", l)
		}
	}
	for _, r := range fake.requests {
		if cr := c.Status.Credential; cr != nil && cr.Kind == pollwarden.CredentialSigV4 {
			// Signed, not sent: the key id is in the header, the key never.
			if got := r.Header.Get("Authorization"); !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential="+replayToken+"/") {
				t.Errorf("request carries Authorization %q, want a SigV4 signature", got)
			}
			continue
		}
		if got := r.Header.Values(credentialHeader(c)); len(got) != 1 || !strings.HasSuffix(got[0], replayToken) {
			t.Errorf("request carries %s %q, want the credential", credentialHeader(c), got)
		}
	}
	if sc.path != "" {
		for _, r := range fake.requests {
			if got := r.URL.RequestURI(); got != sc.path {
				t.Errorf("request to %s, want %s", got, sc.path)
			}
		}
	}
	if sc.body != "" {
		for i, r := range fake.requests {
			if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || fake.bodies[i] != sc.body {
				t.Errorf("request %d: %s %s with body %q, want POST application/json %q", i, r.Method, r.Header.Get("Content-Type"), fake.bodies[i], sc.body)
			}
		}
	}
	if fake.session != "" && (fake.handshakes == 0 || fake.sessionless > 0) {
		t.Errorf("%d handshakes, %d requests without the session id; want a handshake first and the id on every request",
			fake.handshakes, fake.sessionless)
	}
	if t.Failed() {
		t.Logf("story:\n%s", strings.Join(story, "\n"))
	}
	return final, fake
}

// runReplays runs every scenario and checks that together they serve every
// fixture body of the built-in at least once, so no fixture goes untested.
func runReplays(t *testing.T, name string, scenarios []scenario) {
	t.Helper()
	runReplaysExcept(t, name, nil, scenarios)
}

// runReplaysExcept is runReplays for a built-in whose fixtures named in
// elsewhere are answers to another call (a submission), tested by their
// own test.
func runReplaysExcept(t *testing.T, name string, elsewhere []string, scenarios []scenario) {
	t.Helper()
	used := map[string]bool{}
	for _, e := range elsewhere {
		used[e] = true
	}
	for _, sc := range scenarios {
		for _, b := range sc.bodies {
			used[b] = true
		}
		t.Run(sc.name, func(t *testing.T) { replay(t, name, sc) })
	}
	files, err := filepath.Glob(filepath.Join("testdata", name, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasSuffix(base, ".meta") || base == "create" {
			continue // create.json answers a submission: TestReplaySubmissions serves it
		}
		if !used[base] {
			t.Errorf("fixture %s/%s.json is served by no scenario", name, base)
		}
	}
}

// TestEveryBuiltinIsCheckable: every built-in parses, compiles, has a
// description and a fixture directory with its SOURCES.md, and stands by
// itself (what `contract show` prints is what `contract check` reads).
func TestEveryBuiltinIsCheckable(t *testing.T) {
	for _, in := range builtin.List() {
		t.Run(in.Name, func(t *testing.T) {
			ex, err := contract.Builtin(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			c := ex.Spec()
			if c.Name != in.Name || in.Description == "" {
				t.Errorf("name %q, description %q", c.Name, in.Description)
			}
			if _, err := os.Stat(filepath.Join("testdata", in.Name, "SOURCES.md")); err != nil {
				t.Errorf("no fixtures with sources: %v", err)
			}
			if !strings.HasPrefix(c.Status.URL, c.BaseURL+"/") || c.BaseURL == "" {
				t.Errorf("status url %q is not written under base_url %q", c.Status.URL, c.BaseURL)
			}
			l := c.Limits
			if l.MaxStatusRequests < 12 || l.MaxTransportFailures < 3 || l.MaxRateLimited < 3 {
				t.Errorf("limits %+v are below 12 requests / 3 transport failures / 3 rate-limited", l)
			}
		})
	}
}

func credentialHeader(c *pollwarden.ContractSpec) string {
	if c.Status.Credential == nil {
		return "Authorization"
	}
	return c.Status.Credential.Header
}
