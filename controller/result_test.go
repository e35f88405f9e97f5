package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// resultProvider is a provider whose job succeeds at once with the id of
// an output file (OpenAI-like), and serves that file's content.
type resultProvider struct {
	srv     *httptest.Server
	mu      sync.Mutex
	content []byte
	chunked bool
	url     string // result.url in the status body
	fetches int
	auth    []string
}

func newResultProvider(t *testing.T) *resultProvider {
	p := &resultProvider{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		u := p.url
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"state":"succeeded","output_file_id":"file-%s","result":{"url":%q}}`, r.PathValue("id"), u)
	})
	mux.HandleFunc("GET /files/{id}/content", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.fetches++
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		body, chunked := p.content, p.chunked
		p.mu.Unlock()
		if !chunked {
			w.Write(body)
			return
		}
		for len(body) > 0 { // flushed in pieces: no Content-Length
			n := min(8, len(body))
			w.Write(body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
		}
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.url = p.srv.URL + "/files/x/content"
	return p
}

func (p *resultProvider) set(content string, chunked bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.content, p.chunked = []byte(content), chunked
}

func (p *resultProvider) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.fetches }

type resultRig struct {
	t     *testing.T
	p     *resultProvider
	store *sqlite.Store
	ex    *contract.Loaded
	ctl   *Controller
}

func newResultRig(t *testing.T, fetchURL string) *resultRig {
	t.Helper()
	p := newResultProvider(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	yaml := fmt.Sprintf(`version: 1
name: result-test
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:CTL_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result:
  require: [{path: output_file_id, kind: string}, {path: result.url, kind: url}]
  fetch: {url: %[2]q, max_bytes: 64}
`, p.srv.URL, strings.ReplaceAll(fetchURL, "BASE", p.srv.URL))
	c, err := contract.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)}
	getenv := func(k string) (string, bool) { return testToken, k == "CTL_TOKEN" }
	ctl := New(Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)), Owner: "o",
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv})})
	return &resultRig{t: t, p: p, store: st, ex: ex, ctl: ctl}
}

func (r *resultRig) succeeded(id string) {
	r.t.Helper()
	if _, err := r.ctl.Start(context.Background(), r.ex, policy.NewParams{ID: id, ProviderJobID: "j-" + id}); err != nil {
		r.t.Fatal(err)
	}
	op, err := r.ctl.Wait(context.Background(), r.ex, id, nil)
	if err != nil || op.Phase != pollwarden.PhaseSucceeded {
		r.t.Fatalf("wait: %v, phase %v", err, op)
	}
}

func (r *resultRig) events(id string, kinds ...pollwarden.EventKind) []pollwarden.Event {
	r.t.Helper()
	all, err := r.store.EventList(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []pollwarden.Event
	for _, e := range all {
		for _, k := range kinds {
			if e.Kind == k {
				out = append(out, e)
			}
		}
	}
	return out
}

var actorAgent = pollwarden.Actor{Name: "agent-a", Role: pollwarden.RoleAgent}

func TestFetchResultBeforeSuccessIsRefused(t *testing.T) {
	r := newResultRig(t, "BASE/files/{output_file_id}/content")
	r.p.set("a,b\n", false)
	if _, err := r.ctl.Start(context.Background(), r.ex, policy.NewParams{ID: "op1", ProviderJobID: "j1"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err := r.ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, &out)
	if !errors.Is(err, ErrResultRefused) || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("err %v, want a refusal naming the phase waiting", err)
	}
	if r.p.count() != 0 || out.Len() != 0 {
		t.Fatalf("%d fetches reached the provider, %d bytes written", r.p.count(), out.Len())
	}
	if evs := r.events("op1", pollwarden.EventResultFetchStarted); len(evs) != 0 {
		t.Fatalf("a refused fetch recorded %v", evs)
	}
}

func TestFetchResultStreamsAndRecordsDigestTwice(t *testing.T) {
	r := newResultRig(t, "BASE/files/{output_file_id}/content")
	content := "id,total\n1,42\n2,17\n"
	r.p.set(content, true)
	r.succeeded("op1")
	sum := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(sum[:])
	for i := 1; i <= 2; i++ {
		var out bytes.Buffer
		res, err := r.ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, &out)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != content || res.SHA256 != want || res.Bytes != int64(len(content)) {
			t.Fatalf("fetch %d: got %q, %s, %d", i, out.String(), res.SHA256, res.Bytes)
		}
	}
	started := r.events("op1", pollwarden.EventResultFetchStarted)
	done := r.events("op1", pollwarden.EventResultFetched)
	if len(started) != 2 || len(done) != 2 {
		t.Fatalf("%d started and %d fetched events, want 2 and 2", len(started), len(done))
	}
	for _, e := range done {
		if e.Data.SHA256 != want || e.Data.Bytes != int64(len(content)) || e.Data.Actor == nil || e.Data.Actor.Name != "agent-a" {
			t.Fatalf("fetched event %+v, want sha256 %s and %d bytes by agent-a", e.Data, want, len(content))
		}
		if !strings.HasSuffix(e.Data.URL, "/files/file-j-op1/content") {
			t.Fatalf("recorded URL %s", e.Data.URL)
		}
	}
	if r.p.auth[0] != "Bearer "+testToken {
		t.Fatalf("the provider got Authorization %q", r.p.auth[0])
	}
	all, _ := r.store.EventList(context.Background(), "op1")
	for _, e := range all {
		if bytes.Contains(e.Payload, []byte(testToken)) {
			t.Fatalf("the secret is in event %s", e.Kind)
		}
	}
}

func TestFetchResultLargerThanBoundIsRefused(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			r := newResultRig(t, "BASE/files/{output_file_id}/content")
			r.p.set(strings.Repeat("x", 100), chunked)
			r.succeeded("op1")
			var out bytes.Buffer
			_, err := r.ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, &out)
			if !errors.Is(err, ErrResultFailed) || !strings.Contains(err.Error(), "max_bytes 64") {
				t.Fatalf("err %v, want a failure naming max_bytes 64", err)
			}
			if out.Len() > 64 {
				t.Fatalf("%d bytes written past the bound", out.Len())
			}
			failed := r.events("op1", pollwarden.EventResultFetchFailed)
			if len(failed) != 1 || !strings.Contains(failed[0].Data.Detail, "max_bytes") || failed[0].Data.SHA256 != "" {
				t.Fatalf("failed events %+v", failed)
			}
		})
	}
}

func TestFetchResultHoldingTheSecretIsStopped(t *testing.T) {
	r := newResultRig(t, "BASE/files/{output_file_id}/content")
	r.p.set("line one\nkey="+testToken+"\n", true)
	r.succeeded("op1")
	var out bytes.Buffer
	_, err := r.ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, &out)
	if !errors.Is(err, ErrResultFailed) || strings.Contains(err.Error(), testToken) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(out.String(), testToken) {
		t.Fatal("the secret reached the writer")
	}
	all, _ := r.store.EventList(context.Background(), "op1")
	for _, e := range all {
		if bytes.Contains(e.Payload, []byte(testToken)) {
			t.Fatalf("the secret is in event %s", e.Kind)
		}
	}
}

func TestFetchResultFieldOnAnotherOriginIsRefused(t *testing.T) {
	r := newResultRig(t, "{+result.url}")
	var hits int
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer other.Close()
	r.p.mu.Lock()
	r.p.url = other.URL + "/steal"
	r.p.mu.Unlock()
	r.succeeded("op1")
	var out bytes.Buffer
	_, err := r.ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, &out)
	if !errors.Is(err, ErrResultRefused) || !strings.Contains(err.Error(), "not an allowed origin") {
		t.Fatalf("err %v, want a refusal naming the origin", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Fatalf("%d requests reached the other origin", hits)
	}
}

func TestFetchResultWholeURLFieldOnTheContractsOrigin(t *testing.T) {
	r := newResultRig(t, "{+result.url}")
	r.p.set("ok\n", false)
	r.succeeded("op1")
	var out bytes.Buffer
	if _, err := r.ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, &out); err != nil || out.String() != "ok\n" {
		t.Fatalf("err %v, got %q", err, out.String())
	}
}

// TestFetchResultMaxFetches: the contract's max_fetches (default 3) bounds
// the fetches sent for one operation, whichever controller sends them (two
// here, over one store, as two processes would be); one more sends
// nothing, is refused and is recorded, and the count is in the record.
func TestFetchResultMaxFetches(t *testing.T) {
	r := newResultRig(t, "BASE/files/{output_file_id}/content")
	r.p.set("a,b\n", false)
	r.succeeded("op1")
	other := New(Options{Store: r.store, Clock: r.ctl.clock, Rand: rand.New(rand.NewPCG(3, 4)), Owner: "o2", Prober: r.ctl.prober})
	for i, ctl := range []*Controller{r.ctl, other, r.ctl} {
		if _, err := ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, io.Discard); err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
	}
	for _, ctl := range []*Controller{other, r.ctl} {
		res, err := ctl.FetchResult(context.Background(), r.ex, "op1", actorAgent, io.Discard)
		if !errors.Is(err, ErrResultLimit) || !strings.Contains(err.Error(), "max_fetches") || res.Written {
			t.Fatalf("a fourth fetch: %v, want a refusal naming max_fetches", err)
		}
	}
	if r.p.count() != 3 {
		t.Fatalf("the provider saw %d fetches, want 3", r.p.count())
	}
	if n := len(r.events("op1", pollwarden.EventResultFetchRefused)); n != 2 {
		t.Fatalf("%d refusals recorded, want 2", n)
	}
	op, err := r.store.OperationGet(context.Background(), "op1")
	if err != nil || op.ResultFetchesSent != 3 {
		t.Fatalf("record: %v, %d fetches sent, want 3", err, op.ResultFetchesSent)
	}
}
