package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// traceMiddleware makes a request's _meta.traceparent (and tracestate),
// the carrier the MCP specification names for W3C Trace Context, the
// parent of the spans its use case starts, so that an agent's trace goes
// on into pollwarden. A malformed value is ignored, as a W3C propagator
// does; nothing about the trace is answered back.
func traceMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if p := req.GetParams(); p != nil {
			if c := metaCarrier(p.GetMeta()); c != nil {
				ctx = propagation.TraceContext{}.Extract(ctx, c)
			}
		}
		return next(ctx, method, req)
	}
}

// metaCarrier holds the trace context keys of meta, nil without any.
func metaCarrier(meta map[string]any) propagation.MapCarrier {
	var c propagation.MapCarrier
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := meta[k].(string); ok {
			if c == nil {
				c = propagation.MapCarrier{}
			}
			c[k] = v
		}
	}
	return c
}
