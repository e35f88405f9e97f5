package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// Options configures the API. Ops and Tokens are required.
type Options struct {
	// Ops is the process's one application: every route on an operation,
	// the provider callbacks, the gauges and /readyz go through it; its
	// clock times requests.
	Ops    *operations.Service
	Tokens *tokens.Set
	// Logger receives one line per request and the detail of internal
	// errors; default slog.Default().
	Logger *slog.Logger
	// Registry receives the API's metrics and is served on /metrics;
	// default a new registry per handler, never the global default one (two
	// handlers in one process, as in tests, must not collide).
	Registry *prometheus.Registry
	// TraceIncoming makes a request's W3C traceparent header the parent
	// of the spans its use case starts; set it only when the controller
	// traces, so that with tracing off no caller's trace context reaches a
	// provider.
	TraceIncoming bool
}

// api holds what every route needs.
type api struct {
	// ops runs every use case on an operation; the routes only translate.
	ops     *operations.Service
	tokens  *tokens.Set
	clock   pollwarden.Clock
	log     *slog.Logger
	metrics *metrics
	ready   *readiness
}

// route is one line of the SPEC's API table. The table drives the mux, the
// auth check, the metrics label and the tests that compare it with the
// OpenAPI document. It says only whether a route needs a token, and which
// action of operations' table (Caller.May) it asks for: who may do what
// is that table's, not the door's.
type route struct {
	method, path string
	// act is the action the route asks for; "" for a public route (no
	// token: health, metrics, the document, a provider's signed callback).
	act   operations.Action
	serve func(a *api, w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error
}

const public operations.Action = ""

func routes() []route {
	return []route{
		{"POST", "/v1/operations", operations.ActionCreate, (*api).create},
		{"GET", "/v1/operations", operations.ActionRead, (*api).list},
		{"GET", "/v1/operations/{id}", operations.ActionRead, (*api).get},
		{"GET", "/v1/operations/{id}/audit", operations.ActionRead, (*api).audit},
		{"GET", "/v1/operations/{id}/result", operations.ActionRead, (*api).result},
		{"POST", "/v1/operations/{id}/extension-requests", operations.ActionRequestExtension, (*api).requestExtension},
		{"POST", "/v1/operations/{id}/decisions", operations.ActionDecide, (*api).decide},
		{"POST", "/v1/operations/{id}/cancel", operations.ActionCancel, (*api).cancel},
		{"POST", "/v1/operations/{id}/abandon", operations.ActionAbandon, (*api).abandon},
		{"GET", "/v1/quotas", operations.ActionQuotas, (*api).quotas},
		{"GET", "/v1/incidents", operations.ActionIncidents, (*api).incidents},
		{"GET", "/v1/incidents/{id}", operations.ActionIncidents, (*api).incident},
		{"POST", "/v1/incidents/{id}/decisions", operations.ActionDecideIncident, (*api).decideIncident},
		{"GET", "/metrics", public, (*api).serveMetrics},
		{"GET", "/healthz", public, (*api).healthz},
		{"GET", "/readyz", public, (*api).readyz},
		{"GET", "/v1/openapi.json", public, (*api).openAPI},
		{"POST", "/v1/callbacks/{contract}", public, (*api).callback},
	}
}

// NewHandler returns the API's handler. It panics when a required option
// is missing: a daemon without a store or tokens is a wiring mistake, not
// a condition to serve around.
func NewHandler(opts Options) http.Handler {
	if opts.Ops == nil || opts.Tokens == nil {
		panic("httpapi.NewHandler: Ops and Tokens are required")
	}
	a := &api{ops: opts.Ops, tokens: opts.Tokens, clock: opts.Ops.Clock(), log: opts.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	a.metrics = newMetrics(reg, a.ops)
	a.ready = newReadiness(a.ops)

	mux := http.NewServeMux()
	allowed := map[string][]string{}
	for _, rt := range routes() {
		mux.Handle(rt.method+" "+rt.path, a.guard(rt))
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// Same paths without a method: the mux prefers the routes above, so
	// these answer only other methods, as JSON rather than the mux's text.
	for path, methods := range allowed {
		mux.Handle(path, methodNotAllowed(methods))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, codeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	h := a.observe(mux)
	if opts.TraceIncoming {
		h = traceIncoming(h)
	}
	return h
}

// traceIncoming continues the caller's trace: its traceparent (and
// tracestate) become the parent of the use case's spans. A malformed
// header is ignored, as the W3C propagator does; no answer carries a
// trace id back.
func traceIncoming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// guard authenticates and authorises before the route reads anything, so
// an unauthorised caller learns nothing, not even whether an operation
// exists.
func (a *api) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var who tokens.Caller
		if rt.act != public {
			var err *apiError
			who, err = a.authenticate(r)
			if err != nil {
				a.finish(w, r, err)
				return
			}
			setCaller(r, who)
			// The role's part of the table, before any body is read; the
			// use case asks again with the record.
			if err := (operations.Caller{Caller: who}).May(rt.act, nil, ""); err != nil {
				a.finish(w, r, problem(err))
				return
			}
		}
		if err := rt.serve(a, w, r, who.Actor); err != nil {
			a.finish(w, r, err)
		}
	})
}

// finish answers err and logs the cause of an internal error.
func (a *api) finish(w http.ResponseWriter, r *http.Request, err error) {
	ae := writeError(w, err)
	if ae.cause != nil {
		a.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", ae.cause)
	}
}

func methodNotAllowed(methods []string) http.Handler {
	allow := ""
	for i, m := range methods {
		if i > 0 {
			allow += ", "
		}
		allow += m
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, errorf(http.StatusMethodNotAllowed, codeMethodNotAllowed, "%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
	})
}

// observe counts and logs every request by route pattern (never by raw
// path, whose operation ids would make metrics unbounded) and code.
func (a *api) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := a.clock.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		info := &requestInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		next.ServeHTTP(rec, r)
		pattern := r.Pattern
		if pattern == "" || pattern == "/" {
			pattern = "unmatched"
		}
		a.metrics.observe(pattern, rec.status, a.clock.Now().Sub(start))
		a.log.InfoContext(r.Context(), "request", "method", r.Method, "route", pattern, "path", r.URL.Path,
			"status", rec.status, "actor", info.caller.Name, "duration", a.clock.Now().Sub(start).Round(time.Microsecond))
	})
}

// requestInfo carries, from the guard to the route and back to observe,
// who called and what they may see.
type requestInfo struct{ caller tokens.Caller }

type infoKey struct{}

func setCaller(r *http.Request, who tokens.Caller) {
	if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		info.caller = who
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer (flushes,
// deadlines for long-polls).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
