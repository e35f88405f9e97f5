package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tracing"
)

// seen is what a loopback server saw: each request's path and traceparent.
type seen struct {
	mu  sync.Mutex
	got []string // "METHOD /path traceparent"
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("traceparent"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// traceparent is the header the request to path carried, "" when none or
// no such request.
func (s *seen) traceparent(t *testing.T, path string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.got {
		f := strings.Fields(g)
		if len(f) >= 2 && f[0]+" "+f[1] == path {
			if len(f) == 3 {
				return f[2]
			}
			return ""
		}
	}
	t.Fatalf("no request %s reached the server (saw %q)", path, s.got)
	return ""
}

// actionRig is a controller tracing into memory, on a real SQLite store,
// with a provider that submits, answers status, cancels and serves a
// result, and a storage host (an allowed host of another origin) that
// serves a result too.
type actionRig struct {
	ctl             *controller.Controller
	ex              *contract.Loaded
	spans           *tracetest.InMemoryExporter
	provider, store *seen
}

func newActionRig(t *testing.T, resultOnStorage bool) *actionRig {
	t.Helper()
	r := &actionRig{provider: &seen{}, store: &seen{}}
	storage := httptest.NewServer(r.store.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("a,b\n1,2\n")) })))
	t.Cleanup(storage.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Request-Id", "req-77")
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"id":"sub-1","state":"queued"}`))
	})
	state := "succeeded"
	var mu sync.Mutex
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, `{"state":%q,"result":{"url":"%s/blob"}}`, state, storage.URL)
	})
	mux.HandleFunc("POST /jobs/{id}/cancel", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		state = "cancelled"
		mu.Unlock()
		w.Write([]byte(`{"state":"cancelled"}`))
	})
	mux.HandleFunc("GET /files/{id}", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("x,y\n3,4\n")) })
	prov := httptest.NewServer(r.provider.wrap(mux))
	t.Cleanup(prov.Close)
	fetch := prov.URL + "/files/{job_id}"
	if resultOnStorage {
		fetch = "{+result.url}"
	}
	c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: acts
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:ACTS_TOKEN"}
  propagate_trace: true
  request_id_header: X-Request-Id
  allowed_hosts: [%[1]q, %[2]q]
submit: {url: "%[1]s/jobs", job_id_path: id}
cancel: {url: "%[1]s/jobs/{job_id}/cancel"}
state: {path: state, pending: [running, queued], success: [succeeded], failure: [failed, cancelled]}
result:
  require: [{path: result.url, kind: url}]
  fetch: {url: %[3]q, max_bytes: 1024}
backoff: {base: 10ms, max: 20ms}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`, prov.URL, storage.URL, fetch))
	if err != nil {
		t.Fatal(err)
	}
	if r.ex, err = contract.Compile(c); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.spans = tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(r.spans), "")
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	getenv := func(k string) (string, bool) { return canary, k == "ACTS_TOKEN" }
	r.ctl = controller.New(controller.Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv}), Tracer: tr.Tracer})
	return r
}

// span returns the one span named name, checking that no span carries
// the canary credential or the canary note.
func (r *actionRig) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		if strings.Contains(fmt.Sprint(s.Attributes, s.Events, s.Status), canary) {
			t.Fatalf("span %s carries the canary: %v", s.Name, s.Attributes)
		}
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %s, want 1", len(found), name)
	}
	return found[0]
}

func traceparentOf(s tracetest.SpanStub) string {
	return fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())
}

// TestActionsAreSpans: a submission, a result fetch, a cancel and an
// extension request each are a span with the operation id, the contract
// and what came of it; the provider gets the traceparent of the span that
// sent its request (propagate_trace), the storage host of a result none;
// no span holds the credential or the agent's justification.
func TestActionsAreSpans(t *testing.T) {
	r := newActionRig(t, false)
	ctx := context.Background()
	agent := pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}
	op, err := r.ctl.SubmitJob(ctx, r.ex, policy.NewParams{ID: "op-a"}, []byte(`{"prompt":"hi"}`))
	if err != nil || op.Phase != pollwarden.PhaseWaiting {
		t.Fatalf("submit: %v, %v", op, err)
	}
	sub := r.span(t, "pollwarden.submit")
	if a := attrs(sub); a["pollwarden.operation.id"] != "op-a" || a["pollwarden.contract"] != "acts" || a["pollwarden.outcome"] != "waiting" ||
		a["pollwarden.submission.state"] != op.Submission.State || a["pollwarden.provider.request_id"] != "req-77" {
		t.Errorf("the submission's span: %v", a)
	}
	send := r.span(t, "pollwarden.submit.request")
	if a := attrs(send); send.Parent.SpanID() != sub.SpanContext.SpanID() || a["http.response.status_code"] != "202" || a["pollwarden.submission.attempt"] != "1" {
		t.Errorf("the submission's send span (parent %s): %v", send.Parent.SpanID(), a)
	}
	if got := r.provider.traceparent(t, "POST /jobs"); got != traceparentOf(send) {
		t.Errorf("the submission carried traceparent %q, want its send span's %q", got, traceparentOf(send))
	}

	if _, err := r.ctl.RequestExtension(ctx, "op-a", agent, pollwarden.ExtensionRequest{ExtraTime: 5 * time.Minute, Justification: "the queue is long " + canary}); err != nil {
		t.Fatal(err)
	}
	if a := attrs(r.span(t, "pollwarden.extension_request")); a["pollwarden.contract"] != "acts" || a["pollwarden.extension.extra_seconds"] != "300" || a["pollwarden.decision.actor_role"] != "agent" {
		t.Errorf("the extension request's span: %v", a)
	}

	if op, err = r.ctl.Wait(ctx, r.ex, "op-a", nil); err != nil || op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("wait: %v, %v", op, err)
	}
	var out bytes.Buffer
	res, err := r.ctl.FetchResult(ctx, r.ex, "op-a", agent, &out)
	if err != nil {
		t.Fatal(err)
	}
	fetch := r.span(t, "pollwarden.result")
	if a := attrs(fetch); a["pollwarden.result.bytes"] != fmt.Sprint(out.Len()) || a["pollwarden.result.sha256"] != res.SHA256 || a["pollwarden.outcome"] != "fetched" {
		t.Errorf("the result's span: %v", a)
	}
	if got := r.provider.traceparent(t, "GET /files/sub-1"); got != traceparentOf(fetch) {
		t.Errorf("the result fetch carried traceparent %q, want its span's %q", got, traceparentOf(fetch))
	}
}

// TestCancelIsASpan: a cancel is a client span, whose context the cancel
// request carries, with the cancel's state.
func TestCancelIsASpan(t *testing.T) {
	r := newActionRig(t, false)
	ctx := context.Background()
	if _, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op-c", ProviderJobID: "job-c"}); err != nil {
		t.Fatal(err)
	}
	approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	op, err := r.ctl.Cancel(ctx, r.ex, "op-c", policy.DecisionParams{Actor: approver, Note: "wrong input " + canary})
	if err != nil {
		t.Fatal(err)
	}
	c := r.span(t, "pollwarden.cancel")
	if a := attrs(c); a["pollwarden.cancel.state"] != string(op.Cancel.State) || a["http.response.status_code"] != "200" || a["pollwarden.outcome"] != string(op.Phase) {
		t.Errorf("the cancel's span: %v", a)
	}
	if got := r.provider.traceparent(t, "POST /jobs/job-c/cancel"); got != traceparentOf(c) {
		t.Errorf("the cancel carried traceparent %q, want its span's %q", got, traceparentOf(c))
	}
}

// TestNoTraceparentToAnotherOrigin: a result on an allowed host that is
// not the provider's own origin (a storage bucket) is fetched without the
// trace context, though the contract propagates it to the provider.
func TestNoTraceparentToAnotherOrigin(t *testing.T) {
	r := newActionRig(t, true)
	ctx := context.Background()
	if _, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op-s", ProviderJobID: "job-s"}); err != nil {
		t.Fatal(err)
	}
	if op, err := r.ctl.Wait(ctx, r.ex, "op-s", nil); err != nil || op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("wait: %v, %v", op, err)
	}
	if tp := r.provider.traceparent(t, "GET /jobs/job-s"); tp == "" {
		t.Fatal("the provider's status request carried no traceparent: the check below would prove nothing")
	}
	var out bytes.Buffer
	if _, err := r.ctl.FetchResult(ctx, r.ex, "op-s", pollwarden.Actor{Name: "a", Role: pollwarden.RoleAgent}, &out); err != nil || out.Len() == 0 {
		t.Fatalf("fetch: %v, %d bytes", err, out.Len())
	}
	if tp := r.store.traceparent(t, "GET /blob"); tp != "" {
		t.Errorf("the storage host got traceparent %q", tp)
	}
}
