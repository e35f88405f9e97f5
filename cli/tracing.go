package cli

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/pollwarden/pollwarden/tracing"
)

// traceFlushTimeout bounds how long a command waits, on its way out, for
// the spans still buffered to reach the collector: a collector that is
// down must not hold an exit code back for long.
const traceFlushTimeout = 3 * time.Second

const otlpHelp = "export traces by OTLP/HTTP to this URL, e.g. http://127.0.0.1:4318 (default $OTEL_EXPORTER_OTLP_ENDPOINT; unset: no tracing)"

// otlpFlag adds --otlp-endpoint, which serve, mcp, wait and submit share.
func otlpFlag(fl *pflag.FlagSet, p *string) { fl.StringVar(p, "otlp-endpoint", "", otlpHelp) }

// startTracing sets up tracing from the flag or the standard variables;
// flush sends what is buffered within traceFlushTimeout and stops the
// exporter, also when ctx is already cancelled (an interrupted wait).
// A refused endpoint is a usage error.
func (env Env) startTracing(ctx context.Context, endpoint string) (tr *tracing.Tracing, flush func(), err error) {
	tr, err = tracing.Setup(ctx, endpoint, func(k string) string { v, _ := env.Getenv(k); return v })
	if err != nil {
		return nil, nil, usage(err)
	}
	return tr, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
		defer cancel()
		_ = tr.Shutdown(sctx)
	}, nil
}
