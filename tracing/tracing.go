// Package tracing builds the OpenTelemetry tracer that `pollwarden serve`
// hands to the controller: spans exported by OTLP over HTTP (protobuf)
// when an endpoint is configured, and none at all otherwise. It is the
// only package that links the SDK and the exporter, so the controller and
// the decision core stay on the bare API (or below it). The exporter is
// its own (otlp.go): the OpenTelemetry one brings gRPC and genproto into
// the binary for a path pollwarden never takes.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope and the service name of every span.
const Name = "pollwarden"

// Env names the standard variables that turn export on without a flag.
var Env = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// Tracing is a configured tracer and what ends it.
type Tracing struct {
	// Tracer is nil when tracing is off, so that the controller, given
	// nil, skips even the no-op spans' attributes.
	Tracer trace.Tracer
	// Endpoint is where spans go, "" when tracing is off.
	Endpoint string
	provider *sdktrace.TracerProvider
}

// Setup returns tracing that exports to endpoint (an http or https URL,
// the OTLP/HTTP traces path added when it has none), or to the endpoint
// the standard OTEL_EXPORTER_OTLP_* variables name when endpoint is "";
// with neither, no tracer: no exporter, no batching, no cost.
// getenv reads the environment (os.Getenv in the binary).
func Setup(ctx context.Context, endpoint string, getenv func(string) string) (*Tracing, error) {
	from := "--otlp-endpoint"
	if endpoint == "" {
		// The standard variables, read through getenv: the traces
		// endpoint as it is, the general one with the traces path added.
		if v := getenv(Env[0]); v != "" {
			endpoint, from = v, Env[0]
		} else if v := getenv(Env[1]); v != "" {
			endpoint, from = strings.TrimRight(v, "/")+"/v1/traces", Env[1]
		} else {
			return &Tracing{}, nil
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an http:// or https:// URL such as http://127.0.0.1:4318", from, endpoint)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s must not carry user info: put a collector's credentials in OTEL_EXPORTER_OTLP_HEADERS", from)
	}
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/v1/traces"
	}
	cfg, err := readConfig(getenv, os.ReadFile)
	if err != nil {
		return nil, err
	}
	return New(sdktrace.NewBatchSpanProcessor(newExporter(u.String(), cfg)), u.String()), nil
}

// New returns tracing that hands every span to sp: Setup's batching
// exporter, or a test's recorder.
func New(sp sdktrace.SpanProcessor, endpoint string) *Tracing {
	res := resource.NewSchemaless(attribute.String("service.name", Name))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res),
		sdktrace.WithSampler(idsOnly{sdktrace.ParentBased(sdktrace.AlwaysSample())}))
	return &Tracing{Tracer: tp.Tracer(Name), Endpoint: endpoint, provider: tp}
}

// Shutdown sends the spans still buffered and stops the exporter; a no-op
// when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// idsOnly samples as its sampler does but gives every span an empty
// tracestate: a caller's tracestate is vendor data from outside, and a span
// carries ids, names, codes and outcomes only, so the collector never
// receives it (nor a provider, from a span's context).
type idsOnly struct{ sdktrace.Sampler }

func (s idsOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	r := s.Sampler.ShouldSample(p)
	r.Tracestate = trace.TraceState{}
	return r
}

func (s idsOnly) Description() string { return "IdsOnly{" + s.Sampler.Description() + "}" }
