package tracing_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pollwarden/pollwarden/tracing"
)

// collector is an OTLP/HTTP receiver on loopback that decodes each post
// with the collector's own generated types, as a real collector does.
type collector struct {
	mu      sync.Mutex
	reqs    []*coltrace.ExportTraceServiceRequest
	headers []http.Header
	codes   []int // answers to give, in order; 200 after them
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			w.WriteHeader(400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(b, &req) != nil {
		w.WriteHeader(400)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.headers = append(c.headers, r.Header.Clone())
	if len(c.codes) > 0 {
		code := c.codes[0]
		c.codes = c.codes[1:]
		w.WriteHeader(code)
		return
	}
	c.reqs = append(c.reqs, &req)
}

// TestOTLPExportDecodes: what pollwarden's own exporter posts is an
// ExportTraceServiceRequest the collector's generated code decodes: the
// span's ids, parent, kind, attributes of each type, status and the
// resource's service.name; OTEL_EXPORTER_OTLP_HEADERS reach the
// collector, gzip is used when asked, and a 503 is sent again.
func TestOTLPExportDecodes(t *testing.T) {
	col := &collector{codes: []int{503}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":            "x-tenant=blue,authorization=Bearer%20col-secret",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
	}
	tr, err := tracing.Setup(context.Background(), srv.URL, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tr.Tracer.Start(context.Background(), "pollwarden.decision")
	_, child := tr.Tracer.Start(ctx, "pollwarden.cancel", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("pollwarden.operation.id", "op-1"), attribute.Int("http.response.status_code", 503),
			attribute.Bool("pollwarden.decision.expired", true), attribute.Float64("f", 0.5), attribute.StringSlice("s", []string{"a", "b"})))
	child.SetStatus(codes.Error, "server_error")
	child.End()
	parent.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.reqs) != 1 || len(col.headers) != 2 {
		t.Fatalf("%d decoded requests after %d posts, want one batch sent twice (a 503 first)", len(col.reqs), len(col.headers))
	}
	h := col.headers[1]
	if h.Get("X-Tenant") != "blue" || h.Get("Authorization") != "Bearer col-secret" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("headers %v", h)
	}
	rs := col.reqs[0].ResourceSpans
	if len(rs) != 1 || len(rs[0].ScopeSpans) != 1 || rs[0].ScopeSpans[0].Scope.GetName() != tracing.Name {
		t.Fatalf("resource spans %v", rs)
	}
	var service string
	for _, a := range rs[0].Resource.Attributes {
		if a.Key == "service.name" {
			service = a.Value.GetStringValue()
		}
	}
	if service != tracing.Name {
		t.Errorf("service.name %q", service)
	}
	spans := map[string]*tracepb.Span{}
	for _, s := range rs[0].ScopeSpans[0].Spans {
		spans[s.Name] = s
	}
	c, p := spans["pollwarden.cancel"], spans["pollwarden.decision"]
	if c == nil || p == nil {
		t.Fatalf("spans %v", spans)
	}
	if !bytes.Equal(c.TraceId, p.TraceId) || !bytes.Equal(c.ParentSpanId, p.SpanId) || len(p.ParentSpanId) != 0 {
		t.Errorf("child %s under %s, parent %s", hex.EncodeToString(c.ParentSpanId), hex.EncodeToString(p.SpanId), hex.EncodeToString(p.ParentSpanId))
	}
	if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds %s %s", c.Kind, p.Kind)
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "server_error" || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("status %v, times %d–%d", c.Status, c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
	attrs := map[string]string{}
	for _, a := range c.Attributes {
		attrs[a.Key] = a.Value.String()
	}
	for k, want := range map[string]string{"pollwarden.operation.id": "op-1", "http.response.status_code": "503",
		"pollwarden.decision.expired": "true", "f": "0.5", "s": `"b"`} {
		if !strings.Contains(attrs[k], want) {
			t.Errorf("attribute %s = %s, want it to hold %s", k, attrs[k], want)
		}
	}
}

// TestOTLPEnvironmentRefused: an exporter variable that cannot be used
// stops the command at start, naming the variable, never a header's
// value (a collector's credential).
func TestOTLPEnvironmentRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"header without =":     {map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization Bearer col-secret"}, "OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value"},
		"header bad escape":    {map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=col-secret%zz"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of a"},
		"timeout not a number": {map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, `OTEL_EXPORTER_OTLP_TIMEOUT "10s": want a whole number of milliseconds`},
		"compression unknown":  {map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, `OTEL_EXPORTER_OTLP_COMPRESSION "zstd": want gzip or none`},
		"ca not PEM":           {map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": notPEM}, "OTEL_EXPORTER_OTLP_CERTIFICATE " + notPEM + ": no PEM certificate"},
		"ca missing":           {map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "none.pem")}, "OTEL_EXPORTER_OTLP_CERTIFICATE: open"},
		"client cert alone":    {map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": notPEM}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tracing.Setup(context.Background(), "http://127.0.0.1:4318", func(k string) string { return tc.env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "col-secret") {
				t.Fatalf("Setup: %v, want it to say %q and not show the value", err, tc.want)
			}
		})
	}
}
