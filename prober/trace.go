package prober

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// propagateTrace puts the W3C trace context of ctx's span on a request to
// rawURL when the contract allows it (status.propagate_trace) and the URL
// is on the provider's own origin: a redirect or a result on another
// allowed host (a storage bucket) learns no trace id. Only the trace's ids
// are written: a caller's tracestate (vendor data an agent sent with its
// request) is dropped, and the credential is applied after, whatever this
// wrote.
func propagateTrace(ctx context.Context, c *pollwarden.ContractSpec, rawURL string, h http.Header) {
	if !c.Status.PropagateTrace || !contract.ProviderOrigin(c, rawURL) {
		return
	}
	sc := trace.SpanContextFromContext(ctx).WithTraceState(trace.TraceState{})
	ctx = trace.ContextWithSpanContext(ctx, sc)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	h.Del("tracestate")
}
