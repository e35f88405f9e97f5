package tracing_test

import (
	"context"
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

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tracing"
)

const canary = "sk-canary-tracing-4Hq8Vw"

type rig struct {
	st    *sqlite.Store
	tr    *tracing.Tracing
	srv   *fp.Server
	ex    *contract.Loaded
	ctl   *controller.Controller
	spans *tracetest.InMemoryExporter
}

// newRig is a controller on a real SQLite store and a fake provider over
// loopback, tracing into an in-memory exporter; propagate sets
// status.propagate_trace.
func newRig(t *testing.T, propagate bool) *rig { return newRigTraced(t, propagate, true) }

// newRigTraced is newRig, with a controller given no tracer at all unless
// traced.
func newRigTraced(t *testing.T, propagate, traced bool) *rig {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: traced
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:TRACED_TOKEN"}
  propagate_trace: %t
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 100ms, max: 200ms}
limits: {deadline: 10m, max_status_requests: 2, max_transport_failures: 3, max_rate_limited: 3}
escalation: {extension: {time: 5m, status_requests: 2}, expire_after: 1h}
`, srv.URL(), propagate))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(spans), "")
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	getenv := func(k string) (string, bool) { return canary, k == "TRACED_TOKEN" }
	// The real clock: the backoff is short, and the test's subject is
	// what the spans say, not when.
	opts := controller.Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv})}
	if traced {
		opts.Tracer = tr.Tracer
	}
	ctl := controller.New(opts)
	return &rig{st: st, tr: tr, srv: srv, ex: ex, ctl: ctl, spans: spans}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, a := range s.Attributes {
		m[a.Key] = a.Value.Emit()
	}
	return m
}

// TestSpansForStepsAndDecisions: each step is a span holding its claim,
// status request and record, each decision a span of its own, all with
// the operation id and contract, and outcomes that say what happened; the
// provider receives the status request span's traceparent; the
// credential (a canary) is in no span.
func TestSpansForStepsAndDecisions(t *testing.T) {
	r := newRig(t, true)
	r.srv.Script("job-1", fp.State("running", nil))
	ctx := context.Background()
	if _, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op-1", ProviderJobID: "job-1"}); err != nil {
		t.Fatal(err)
	}
	op, err := r.ctl.Wait(ctx, r.ex, "op-1", nil)
	if err != nil || op.Phase != pollwarden.PhaseEscalated {
		t.Fatalf("wait: %v, %v", op, err)
	}
	approver := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	if _, err := r.ctl.Decide(ctx, r.ex, "op-1", policy.DecisionParams{Option: pollwarden.OptionAbandon, Actor: approver, Note: "not needed: " + canary}); err != nil {
		t.Fatal(err)
	}

	byName := map[string][]tracetest.SpanStub{}
	for _, s := range r.spans.GetSpans() {
		byName[s.Name] = append(byName[s.Name], s)
		a := attrs(s)
		if a["pollwarden.operation.id"] != "op-1" || a["pollwarden.contract"] != "traced" {
			t.Errorf("span %s lacks the operation id and contract: %v", s.Name, a)
		}
		if strings.Contains(fmt.Sprint(s.Attributes, s.Events, s.Status), canary) {
			t.Errorf("span %s carries the credential or the note: %v", s.Name, s.Attributes)
		}
	}
	reqs := byName["pollwarden.request"]
	if len(reqs) != 2 || len(byName["pollwarden.claim"]) < 2 || len(byName["pollwarden.record"]) != 2 {
		t.Fatalf("spans by name: %d requests, %d claims, %d records, want 2, ≥2, 2", len(reqs), len(byName["pollwarden.claim"]), len(byName["pollwarden.record"]))
	}
	for _, s := range append(byName["pollwarden.claim"], append(reqs, byName["pollwarden.record"]...)...) {
		if !s.Parent.IsValid() || !parentIs(s, byName["pollwarden.step"]) {
			t.Errorf("span %s is not inside a step's span", s.Name)
		}
	}
	if a := attrs(reqs[0]); a["http.response.status_code"] != "200" || a["pollwarden.status_request"] != "1" || a["pollwarden.outcome"] != "answered" {
		t.Errorf("the first request's span: %v", a)
	}
	last := byName["pollwarden.record"][1]
	if a := attrs(last); a["pollwarden.outcome"] != "escalated" || a["pollwarden.reason"] != "request_budget_exhausted" {
		t.Errorf("the last record's span: %v", a)
	}
	decisions := byName["pollwarden.decision"]
	if len(decisions) != 1 {
		t.Fatalf("%d decision spans, want 1", len(decisions))
	}
	if a := attrs(decisions[0]); a["pollwarden.decision.option"] != "abandon" || a["pollwarden.outcome"] != "failed" || a["pollwarden.decision.actor_role"] != "approver" {
		t.Errorf("the decision's span: %v", a)
	}

	// What the provider saw is the request span's context, W3C format.
	got := r.srv.Requests("job-1")
	if len(got) != 2 {
		t.Fatalf("the provider saw %d requests", len(got))
	}
	for i, req := range got {
		want := fmt.Sprintf("00-%s-%s-01", reqs[i].SpanContext.TraceID(), reqs[i].SpanContext.SpanID())
		if tp := req.Header.Get("traceparent"); tp != want {
			t.Errorf("request %d: traceparent %q, want the request span's %q", i+1, tp, want)
		}
	}
}

func parentIs(s tracetest.SpanStub, parents []tracetest.SpanStub) bool {
	for _, p := range parents {
		if p.SpanContext.SpanID() == s.Parent.SpanID() && p.SpanContext.TraceID() == s.Parent.TraceID() {
			return true
		}
	}
	return false
}

// TestNoTraceparentUnlessTheContractAllows: tracing on and the contract
// silent, or the contract willing and tracing off: the provider gets no
// trace header either way, and without a tracer nothing is recorded.
func TestNoTraceparentUnlessTheContractAllows(t *testing.T) {
	for _, tc := range []struct {
		name              string
		propagate, traced bool
	}{{"contract silent", false, true}, {"tracing off", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRigTraced(t, tc.propagate, tc.traced)
			r.srv.Script("job-2", fp.Succeeded("https://results.example.com/r.csv"))
			ctx := context.Background()
			if _, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op-2", ProviderJobID: "job-2"}); err != nil {
				t.Fatal(err)
			}
			if op, err := r.ctl.Wait(ctx, r.ex, "op-2", nil); err != nil || op.Phase != pollwarden.PhaseSucceeded {
				t.Fatalf("wait: %v, %v", op, err)
			}
			if got := len(r.spans.GetSpans()); (got > 0) != tc.traced {
				t.Fatalf("%d spans recorded, traced %t", got, tc.traced)
			}
			if r.srv.Count("job-2") == 0 {
				t.Fatal("no request reached the provider: the check below would pass on nothing")
			}
			for _, req := range r.srv.Requests("job-2") {
				if tp := req.Header.Get("traceparent"); tp != "" {
					t.Errorf("traceparent %q sent", tp)
				}
			}
		})
	}
}

// TestSetup: no endpoint and no variable is no tracing at all; a bad
// endpoint is refused, naming the flag; the standard variable turns it on.
func TestSetup(t *testing.T) {
	none := func(string) string { return "" }
	off, err := tracing.Setup(context.Background(), "", none)
	if err != nil || off.Endpoint != "" {
		t.Fatalf("off: %+v, %v", off, err)
	}
	if off.Tracer != nil || off.Shutdown(context.Background()) != nil {
		t.Errorf("with tracing off there is a tracer %v, or nothing to shut down fails", off.Tracer)
	}
	for _, bad := range []string{"127.0.0.1:4318", "ftp://collector", "http://user:pw@collector:4318"} {
		if _, err := tracing.Setup(context.Background(), bad, none); err == nil || !strings.Contains(err.Error(), "--otlp-endpoint") {
			t.Errorf("Setup(%q): %v", bad, err)
		}
	}
	env := func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "http://127.0.0.1:4318"
		}
		return ""
	}
	on, err := tracing.Setup(context.Background(), "", env)
	if err != nil || on.Endpoint != "http://127.0.0.1:4318/v1/traces" {
		t.Fatalf("from the environment: %+v, %v", on, err)
	}
	_ = on.Shutdown(context.Background())
}

// TestExportsOverOTLPHTTP: with an endpoint, spans reach an OTLP/HTTP
// receiver on loopback as protobuf posts to the traces path.
func TestExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies int
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		bodies += len(b)
		mu.Unlock()
	}))
	defer recv.Close()
	tr, err := tracing.Setup(context.Background(), recv.URL, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Tracer.Start(context.Background(), "pollwarden.step")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[0] != "POST /v1/traces application/x-protobuf" || bodies == 0 {
		t.Fatalf("the receiver saw %q (%d bytes)", paths, bodies)
	}
}

// hoursLater is the real clock moved on by a duration, for a decision
// clock that must find an expiry due; it never sleeps.
type hoursLater time.Duration

func (h hoursLater) Now() time.Time { return time.Now().Add(time.Duration(h)) }
func (hoursLater) Sleep(ctx context.Context, _ time.Duration) error {
	return ctx.Err()
}

func (hoursLater) NewTimer(d time.Duration) (pollwarden.Timer, <-chan time.Time) {
	return pollwarden.WallTimers{}.NewTimer(d)
}

func (hoursLater) NewTicker(d time.Duration) (pollwarden.Ticker, <-chan time.Time) {
	return pollwarden.WallTimers{}.NewTicker(d)
}

// TestExpiredDecisionIsASpan: a decision request nobody answered expires,
// and that expiry is a decision span of its own, marked expired, with the
// default's outcome.
func TestExpiredDecisionIsASpan(t *testing.T) {
	r := newRig(t, false)
	r.srv.Script("job-3", fp.State("running", nil))
	ctx := context.Background()
	if _, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op-3", ProviderJobID: "job-3"}); err != nil {
		t.Fatal(err)
	}
	if op, err := r.ctl.Wait(ctx, r.ex, "op-3", nil); err != nil || op.Phase != pollwarden.PhaseEscalated {
		t.Fatalf("wait: %v, %v", op, err)
	}
	later := controller.New(controller.Options{Store: r.st, Clock: hoursLater(2 * time.Hour), Rand: rand.New(rand.NewPCG(3, 4)),
		Prober: prober.New(prober.Options{Now: time.Now}), Tracer: r.tr.Tracer})
	lookup := func(string) (*contract.Loaded, bool) { return r.ex, true }
	if _, err := later.DecisionTick(ctx, lookup); err != nil {
		t.Fatal(err)
	}
	var expired []tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		if s.Name == "pollwarden.decision" {
			expired = append(expired, s)
		}
	}
	if len(expired) != 1 {
		t.Fatalf("%d decision spans after the expiry, want 1", len(expired))
	}
	if a := attrs(expired[0]); a["pollwarden.decision.expired"] != "true" || a["pollwarden.outcome"] != "failed" || a["pollwarden.operation.id"] != "op-3" {
		t.Errorf("the expiry's span: %v", a)
	}
}
