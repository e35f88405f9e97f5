package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// exported is one span as the OTLP receiver got it.
type exported struct {
	name, trace, span, parent string
	attrs                     map[string]string
}

// exportedSpans decodes every span the receiver got, failing on the
// canary credential or the canary note anywhere in the bytes.
func exportedSpans(t *testing.T, recv *recorder, canaries ...string) []exported {
	t.Helper()
	var out []exported
	for _, b := range recv.Bodies() {
		for _, c := range append(canaries, canary) {
			if bytes.Contains(b, []byte(c)) {
				t.Fatalf("%q reached the trace exporter", c)
			}
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatalf("the receiver got no OTLP protobuf: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					e := exported{name: s.Name, trace: hex.EncodeToString(s.TraceId), span: hex.EncodeToString(s.SpanId),
						parent: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
					for _, a := range s.Attributes {
						e.attrs[a.Key] = a.Value.GetStringValue()
					}
					out = append(out, e)
				}
			}
		}
	}
	return out
}

func spansNamed(spans []exported, name string) []exported {
	var out []exported
	for _, s := range spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// assertCallersChild checks that the one extension request span of
// operation id is in the caller's trace, under the caller's span.
func assertCallersChild(t *testing.T, spans []exported, id string) {
	t.Helper()
	ext := spansNamed(spans, "pollwarden.extension_request")
	if len(ext) != 1 || ext[0].trace != callerTrace || ext[0].parent != callerSpan || ext[0].attrs["pollwarden.operation.id"] != id {
		t.Fatalf("extension request spans %+v, want one of %s in the caller's trace under its span", ext, id)
	}
}

// tracedRig is what a trace test starts from: a fake provider that wants
// the canary credential, an OTLP receiver, a directory and in it a
// contracts directory with tracedContract.
func tracedRig(t *testing.T) (srv *fp.Server, recv *recorder, dir, cdir string) {
	t.Helper()
	srv = fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	recv = newRecorder(t, "/v1/traces")
	dir = t.TempDir()
	return srv, recv, dir, tracedContract(t, dir, srv.URL())
}

// tracedContract writes a contract that propagates the trace and can
// submit, in its own directory.
func tracedContract(t *testing.T, dir, base string) string {
	t.Helper()
	cdir := filepath.Join(dir, "contracts")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: traced
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  propagate_trace: true
submit: {url: "%s/jobs", job_id_path: id}
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 100ms, max: 200ms}
limits: {deadline: 1m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`, base, base)
	if err := os.WriteFile(filepath.Join(cdir, "traced.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return cdir
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	otherTrace  = "0af7651916cd43dd8448eb211c80319c"
)

// TestServeContinuesTheCallersTrace: an API request's traceparent is the
// parent of the span of the use case it asks for, so an agent's trace goes
// on into pollwarden; a second agent that sends its own trace with a
// request on the first agent's operation is refused, and no span in its
// trace names that operation.
func TestServeContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	srv, recv, dir, cdir := tracedRig(t)
	srv.Script("long-job", fp.State("running", nil))
	tokens := fmt.Sprintf("tokens:\n  - {name: agent-a, role: agent, sha256: %q}\n  - {name: agent-b, role: agent, sha256: %q}\n", sum("agent-token"), sum("other-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--otlp-endpoint", recv.URL)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)
	traced := func(token, method, path, body, trace string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", "00-"+trace+"-"+callerSpan+"-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
		if h := resp.Header.Get("traceparent") + resp.Header.Get("traceresponse"); h != "" {
			t.Errorf("the answer carried a trace header back: %q", h)
		}
	}
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"op-a","contract":"traced","job_id":"long-job"}`, 201)
	traced("agent-token", "POST", "/v1/operations/op-a/extension-requests", `{"extra_time":"5m","justification":"long queue `+canary+`"}`, callerTrace, 202)
	traced("other-token", "POST", "/v1/operations/op-a/abandon", `{"note":"mine now"}`, otherTrace, 404)
	traced("other-token", "POST", "/v1/operations/op-a/extension-requests", `{"extra_time":"5m","justification":"x"}`, otherTrace, 404)
	// The step span is the scheduler's: on a busy machine it may not have
	// stepped op-a yet when the requests above are answered.
	waitFor(t, "the scheduler's first step of op-a", func() bool {
		used, _ := call(t, base, "agent-token", "GET", "/v1/operations/op-a", "", 200)["status_requests_used"].(float64)
		return used >= 1
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, p.stderr.String())
	}
	spans := exportedSpans(t, recv)
	assertCallersChild(t, spans, "op-a")
	if len(spansNamed(spans, "pollwarden.step")) == 0 {
		t.Fatal("no step span exported: the scheduler's spans are missing")
	}
	for _, s := range spans {
		if s.trace == otherTrace {
			t.Errorf("the other agent's trace holds span %s %v", s.name, s.attrs)
		}
		if s.name == "pollwarden.step" && s.trace == callerTrace {
			t.Errorf("a scheduler step joined the caller's trace: it is not the caller's doing")
		}
	}
}

// TestMCPStdioExportsTraces: `pollwarden mcp --otlp-endpoint` exports its
// spans by the time it exits after the host closes stdin, and a tool
// call's _meta.traceparent is the parent of the use case's span.
func TestMCPStdioExportsTraces(t *testing.T) {
	t.Parallel()
	srv, recv, dir, cdir := tracedRig(t)
	srv.Script("mcp-job", fp.State("running", nil))
	h := startMCP(t, []string{"mcp", "--contracts", cdir, "--store", filepath.Join(dir, "pw.db"), "--otlp-endpoint", recv.URL},
		[]string{"PROC_TOKEN=" + canary})
	if _, _, isErr := h.call("watch_job", `{"contract":"traced","job_id":"mcp-job","operation_id":"op-m"}`); isErr {
		t.Fatalf("watch_job failed; stderr: %s", h.stderr.String())
	}
	waitFor(t, "a status request", func() bool { return srv.Count("mcp-job") > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.session.CallTool(ctx, &sdk.CallToolParams{Name: "request_extension",
		Meta:      sdk.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"},
		Arguments: map[string]any{"operation_id": "op-m", "extra_time": "5m", "extra_status_requests": 0, "justification": "long queue " + canary}})
	if err != nil || res.IsError {
		t.Fatalf("request_extension: %v %+v", err, res.Content[0])
	}
	_ = h.session.Close() // the host closes stdin; the server flushes and exits
	spans := exportedSpans(t, recv)
	assertCallersChild(t, spans, "op-m")
	if len(spansNamed(spans, "pollwarden.request")) == 0 {
		t.Fatal("the embedded scheduler's request spans were not exported before exit")
	}
}

// TestWaitAndSubmitExportTraces: wait with --otlp-endpoint, and submit
// with only the standard OTEL_EXPORTER_OTLP_ENDPOINT, export their spans
// before they exit, and the provider sees the traceparent of the span that
// sent each request; without either, no span and no traceparent.
func TestWaitAndSubmitExportTraces(t *testing.T) {
	t.Parallel()
	srv, recv, dir, cdir := tracedRig(t)
	srv.Script("w-job", fp.State("running", nil), fp.Succeeded("https://results.example.com/r.csv"))
	srv.Script("sub-1", fp.Succeeded("https://results.example.com/s.csv"))
	cfile := filepath.Join(cdir, "traced.yaml")

	w := start(t, "wait", "--contract", cfile, "--job-id", "w-job", "--store", filepath.Join(dir, "w.db"), "--quiet", "--otlp-endpoint", recv.URL)
	if code := w.exitCode(t); code != 0 {
		t.Fatalf("wait exited %d: %s", code, w.stderr.String())
	}
	spans := exportedSpans(t, recv)
	assertRequestSpans(t, spans, srv.Requests("w-job"))

	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, []byte(`{"prompt":"hello"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before := len(recv.Bodies())
	s := startEnv(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL}, "submit", "--contract", cfile, "--body", body,
		"--store", filepath.Join(dir, "s.db"), "--quiet")
	if code := s.exitCode(t); code != 0 {
		t.Fatalf("submit exited %d: %s", code, s.stderr.String())
	}
	if len(recv.Bodies()) == before {
		t.Fatal("submit exported nothing through OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	sub := spansNamed(exportedSpans(t, recv), "pollwarden.submit")
	if len(sub) != 1 || sub[0].attrs["pollwarden.outcome"] != "waiting" || sub[0].attrs["pollwarden.submission.state"] == "" {
		t.Fatalf("submit spans %+v", sub)
	}

	// No endpoint: nothing exported, nothing propagated.
	before = len(recv.Bodies())
	srv.Script("quiet-job", fp.Succeeded("https://results.example.com/q.csv"))
	q := start(t, "wait", "--contract", cfile, "--job-id", "quiet-job", "--store", filepath.Join(dir, "q.db"), "--quiet")
	if code := q.exitCode(t); code != 0 {
		t.Fatalf("wait exited %d: %s", code, q.stderr.String())
	}
	if len(recv.Bodies()) != before {
		t.Error("wait without an endpoint exported spans")
	}
	for _, r := range srv.Requests("quiet-job") {
		if tp := r.Header.Get("traceparent"); tp != "" {
			t.Errorf("wait without tracing sent traceparent %q", tp)
		}
	}
	assertNoCanary(t, dir, w, s, q)
}

// assertRequestSpans checks that every status request the provider saw
// was sent under an exported request span, each inside a step span of its
// own, and carried that span as its traceparent. A step may end without a
// request (a wake-up before the operation is due, which a loaded machine
// makes more likely), so steps are not counted, only those that sent.
func assertRequestSpans(t *testing.T, spans []exported, sent []fp.Request) {
	t.Helper()
	reqs := spansNamed(spans, "pollwarden.request")
	if len(sent) == 0 || len(reqs) != len(sent) {
		t.Fatalf("the provider saw %d status requests and %d request spans were exported, want one span per request", len(sent), len(reqs))
	}
	steps := map[string]bool{}
	for _, s := range spansNamed(spans, "pollwarden.step") {
		steps[s.span] = true
	}
	bySpan := map[string]exported{}
	for _, r := range reqs {
		if !steps[r.parent] {
			t.Errorf("request span %s has no exported step span of its own as its parent", r.span)
		}
		steps[r.parent] = false // a second request in the same step fails here
		bySpan[r.span] = r
	}
	for _, r := range sent {
		tp := strings.Split(r.Header.Get("traceparent"), "-")
		if len(tp) != 4 {
			t.Errorf("a status request carried traceparent %q", r.Header.Get("traceparent"))
			continue
		}
		if s, ok := bySpan[tp[2]]; !ok || s.trace != tp[1] {
			t.Errorf("a status request carried %q, no exported request span", r.Header.Get("traceparent"))
		}
		delete(bySpan, tp[2])
	}
}
