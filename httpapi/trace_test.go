package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/httpapi"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
	"github.com/pollwarden/pollwarden/tracing"
)

const (
	traceCanary   = "sk-canary-httpapi-trace-2b7"
	approverTok   = "tok-trace-approver"
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
)

// cancelWithTrace runs an approver's cancel through the API with the
// caller's traceparent header tp, tracing into spans when it is set (and
// reading the header only then, as serve wires it), and returns the
// traceparent the provider's cancel request carried.
func cancelWithTrace(t *testing.T, spans *tracetest.InMemoryExporter, tp string) string {
	t.Helper()
	prov := fp.New()
	t.Cleanup(prov.Close)
	prov.RequireToken(traceCanary)
	prov.Script("job-1", fp.State("running", nil))
	c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: traced
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:TRACE_TOKEN"}
  propagate_trace: true
cancel: {url: "%[1]s/jobs/{job_id}/cancel"}
state: {path: state, pending: [running], success: [succeeded], failure: [failed], cancelled: [cancelled]}
result: {require: [{path: result.url, kind: url}]}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`, prov.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	set, err := contract.NewSet(ex)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	getenv := func(k string) (string, bool) { return traceCanary, k == "TRACE_TOKEN" }
	opts := controller.Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv})}
	if spans != nil {
		tr := tracing.New(sdktrace.NewSimpleSpanProcessor(spans), "")
		t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
		opts.Tracer = tr.Tracer
	}
	ctl := controller.New(opts)
	if _, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: "op-1", ProviderJobID: "job-1"}); err != nil {
		t.Fatal(err)
	}
	toks, err := tokens.New(tokens.Spec{Name: "alice", Role: pollwarden.RoleApprover, SHA256: tokens.Hash(approverTok)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Options{Ops: operations.New(operations.Options{Controller: ctl, Contracts: set}), Tokens: toks,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TraceIncoming: spans != nil}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/operations/op-1/cancel", strings.NewReader(`{"note":"wrong input `+traceCanary+`"}`))
	req.Header.Set("Authorization", "Bearer "+approverTok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel answered %d", resp.StatusCode)
	}
	got := prov.Requests("job-1")
	if len(got) != 1 {
		t.Fatalf("the provider saw %d requests, want the cancel alone", len(got))
	}
	return got[0].Header.Get("traceparent")
}

// TestIncomingTraceparentIsTheParent: the approver's traceparent is the
// parent of the decision's span, the cancel's span is inside it, and the
// provider's cancel request carries the cancel span's context: one trace
// from the caller to the provider.
func TestIncomingTraceparentIsTheParent(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	sent := cancelWithTrace(t, spans, "00-"+callerTraceID+"-"+callerSpanID+"-01")
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name] = s
		if strings.Contains(fmt.Sprint(s.Attributes, s.Events, s.Status), traceCanary) {
			t.Errorf("span %s carries the canary: %v", s.Name, s.Attributes)
		}
	}
	dec, cancel := byName["pollwarden.decision"], byName["pollwarden.cancel"]
	if dec.SpanContext.TraceID().String() != callerTraceID || dec.Parent.SpanID().String() != callerSpanID || !dec.Parent.IsRemote() {
		t.Fatalf("the decision's span is in trace %s under %s, want the caller's %s under %s",
			dec.SpanContext.TraceID(), dec.Parent.SpanID(), callerTraceID, callerSpanID)
	}
	if cancel.Parent.SpanID() != dec.SpanContext.SpanID() {
		t.Errorf("the cancel's span is not inside the decision's")
	}
	if want := "00-" + callerTraceID + "-" + cancel.SpanContext.SpanID().String() + "-01"; sent != want {
		t.Errorf("the provider got traceparent %q, want the cancel span's %q", sent, want)
	}
}

// TestIncomingTraceparentIgnored: a malformed traceparent starts a trace
// of pollwarden's own; with tracing off the header is not read at all,
// so the caller's trace context never reaches the provider.
func TestIncomingTraceparentIgnored(t *testing.T) {
	t.Run("malformed", func(t *testing.T) {
		spans := tracetest.NewInMemoryExporter()
		if sent := cancelWithTrace(t, spans, "00-"+callerTraceID+"-zz-01"); sent == "" || strings.Contains(sent, callerTraceID) {
			t.Errorf("the provider got traceparent %q", sent)
		}
		for _, s := range spans.GetSpans() {
			if s.Parent.IsRemote() {
				t.Errorf("span %s has a remote parent from a malformed header", s.Name)
			}
		}
	})
	t.Run("tracing off", func(t *testing.T) {
		if sent := cancelWithTrace(t, nil, "00-"+callerTraceID+"-"+callerSpanID+"-01"); sent != "" {
			t.Errorf("with tracing off the provider got traceparent %q", sent)
		}
	})
}
