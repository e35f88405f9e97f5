package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/console"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/httpapi"
	pwmcp "github.com/pollwarden/pollwarden/mcp"
	"github.com/pollwarden/pollwarden/metrics"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/tokens"
	"github.com/pollwarden/pollwarden/tracing"
	"github.com/pollwarden/pollwarden/webhook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

type serveFlags struct {
	listen, store, contracts, tokens, webhooks, auditKey, logLevel string
	otlpEndpoint                                                   string
	concurrency, maxConns                                          int
	readTimeout                                                    time.Duration
	pruneOlderThan                                                 string
	cpuProfile                                                     string
	publicURL                                                      string
}

func serveCmd(env Env) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR --store PATH|postgres://… --contracts DIR --tokens FILE [--webhooks FILE]",
		Short: "Run the daemon: the JSON API, the scheduler that owns every wait, metrics",
		Long: `serve owns every registered wait: a scheduler steps due operations (one
lease per request, never while sleeping, a per-contract request-rate ceiling,
overdue work paced after a restart), and a JSON API lets agents register jobs
and read outcomes and approvers decide escalations. Every *.yaml in
--contracts is a contract; SIGHUP reloads them and the tokens file (a bad
file keeps what was loaded before and is reported). A create whose
contract's credential is missing from serve's environment is refused (422).
SIGINT/SIGTERM stop claiming, let in-flight requests finish, and exit. See
docs/serve.md and GET /v1/openapi.json.

--webhooks FILE lists receivers (name, url, secret: env:NAME or file:PATH,
events: escalated and/or final). On every escalation and every final
outcome each receiver gets a POST signed per Standard Webhooks (webhook-id,
webhook-timestamp, webhook-signature), sent from a durable outbox in the
store, retried with backoff and jitter, at least once across restarts. The
file is read at start (SIGHUP does not reload it). An endpoint with
format: slack or format: email gets each escalation, reminder and expiry as
a decision request for a person, with links to console_url (or to
--public-url, the address people reach the daemon at; https:// there also
makes every console cookie Secure behind a TLS proxy). A contract's
escalation.remind_after and expire_after are run by serve with or without
--webhooks. See docs/webhooks.md.

A client must send a request's headers and body within --read-timeout
(default 30s) or its connection is closed; headers are capped at 64 KiB,
an idle keep-alive connection is closed after 60 s, and at most
--max-connections connections are served at once (more wait to be
accepted). Long-polls and MCP streams are not cut by these bounds.
GET /healthz answers while the process serves; GET /readyz answers 200
only while the store accepts a write.

--prune-older-than D prunes, at start and then regularly (every tenth of D,
between a minute and an hour), the records of operations finished longer
ago than D, as 'pollwarden ops prune' does; the audit chain stays
verifiable.

--otlp-endpoint URL (or the standard OTEL_EXPORTER_OTLP_ENDPOINT) exports
OpenTelemetry traces over OTLP/HTTP: a span for each step (claim, status
request, record), each decision, submission, result fetch, cancel and
extension request, with the operation id, contract and outcome. A
request's traceparent header (MCP: _meta.traceparent) is the parent of
its spans. Off by default. A contract with status.propagate_trace: true
sends the request's traceparent to the provider's own origin.
See docs/tracing.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return env.runServe(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8470", "address to listen on")
	fl.StringVar(&f.store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	fl.StringVar(&f.contracts, "contracts", "", "directory of contract files (*.yaml)")
	fl.StringVar(&f.tokens, "tokens", "", "tokens file: names, roles and sha256 of bearer tokens")
	fl.StringVar(&f.webhooks, "webhooks", "", "webhooks file: receivers of signed POSTs on escalations and final outcomes (docs/webhooks.md)")
	fl.StringVar(&f.auditKey, "audit-key", "", auditKeyHelp)
	fl.IntVar(&f.concurrency, "concurrency", scheduler.DefaultConcurrency, "status requests in flight at once")
	fl.StringVar(&f.logLevel, "log-level", "info", "least severe log lines written to stderr (JSON): debug, info, warn or error")
	fl.DurationVar(&f.readTimeout, "read-timeout", DefaultReadTimeout, "a request's headers and body must arrive within this, or the connection is closed")
	fl.IntVar(&f.maxConns, "max-connections", DefaultMaxConnections, "connections served at once; more wait to be accepted")
	fl.StringVar(&f.publicURL, "public-url", "", "the address people reach the daemon at (https://… behind a TLS proxy): links in notifications use it; https makes every console cookie Secure")
	fl.StringVar(&f.pruneOlderThan, "prune-older-than", "", "prune, on a schedule, the records of operations finished longer ago than this (30d, 720h); see pollwarden ops prune")
	otlpFlag(fl, &f.otlpEndpoint)
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the daemon to this file until it stops (for go tool pprof)")
	_ = fl.MarkHidden("cpu-profile")
	return cmd
}

func (env Env) runServe(ctx context.Context, f serveFlags) error {
	switch {
	case f.contracts == "":
		return usage(errors.New("--contracts is required"))
	case f.tokens == "":
		return usage(errors.New("--tokens is required"))
	case f.concurrency < 1:
		return usage(fmt.Errorf("--concurrency must be at least 1, got %d", f.concurrency))
	case f.readTimeout <= 0:
		return usage(fmt.Errorf("--read-timeout must be positive, got %s", f.readTimeout))
	case f.maxConns < 1:
		return usage(fmt.Errorf("--max-connections must be at least 1, got %d", f.maxConns))
	}
	publicURL := ""
	if f.publicURL != "" {
		var err error
		if publicURL, err = parsePublicURL(f.publicURL); err != nil {
			return usage(err)
		}
	}
	var pruneAge time.Duration
	if f.pruneOlderThan != "" {
		var err error
		if pruneAge, err = parseAge("--prune-older-than", f.pruneOlderThan); err != nil {
			return usage(err)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usage(fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel))
	}
	set, err := contract.LoadDir(f.contracts)
	if err != nil {
		return usage(err)
	}
	tokens, err := tokens.Load(f.tokens)
	if err != nil {
		return usage(err)
	}
	var hooks *webhook.Config
	if f.webhooks != "" {
		if hooks, err = env.loadWebhooks(f.webhooks); err != nil {
			return usage(err)
		}
		if publicURL != "" {
			if hooks.ConsoleURL != "" && hooks.ConsoleURL != publicURL {
				return usage(fmt.Errorf("--public-url %s and the webhooks file's console_url %s disagree: links would go to one and people to the other; keep one", publicURL, hooks.ConsoleURL))
			}
			hooks.ConsoleURL = publicURL
		}
	}
	defer serveGC(env.Getenv)()
	tr, flushTraces, err := env.startTracing(ctx, f.otlpEndpoint)
	if err != nil {
		return err
	}
	defer flushTraces()
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return usage(fmt.Errorf("--cpu-profile: %w", err))
		}
		defer stop()
	}
	st, _, err := env.openStoreKey(ctx, f.store, f.auditKey, true)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usage(fmt.Errorf("--listen: %w", err))
	}
	log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	return serve(ctx, env, newLimitListener(ln, f.maxConns), st, set, reloadable{tokens: tokens, tokensPath: f.tokens},
		hooks, strings.HasPrefix(publicURL, "https://"), f.concurrency, f.readTimeout, pruneAge, log, tr)
}

// serve wires the daemon: one controller shared by the API and the
// scheduler, the controller's changes fanned out to long-polls and to the
// scheduler, the webhook dispatcher when hooks is set, the prune loop
// when pruneAge is, and signals for reload and shutdown. The long-lived
// parts start and stop as one group: serve returns once each has.
func serve(ctx context.Context, env Env, ln net.Listener, st pollwarden.Store, set *contract.Set, rl reloadable,
	hooks *webhook.Config, secureCookies bool, concurrency int, readTimeout, pruneAge time.Duration, log *slog.Logger, tr *tracing.Tracing) error {
	tokens := rl.tokens
	// One registry for the whole daemon, served by the API on /metrics:
	// the API's own series and the controller's and scheduler's.
	reg := prometheus.NewRegistry()
	e := env.newEngine(st, set, concurrency, log, metrics.New(reg), tr.Tracer)
	ctl, sched, changes := e.ctl, e.sched, e.changes
	var hookRun func(context.Context) error
	if hooks != nil {
		d, err := env.newDispatcher(st, hooks, reg, log)
		if err != nil {
			return err
		}
		// Before any request is accepted: every event from now on is sent.
		if err := d.Init(ctx); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		hookRun = d.Run
	}
	// One listener: /mcp is the MCP door (streamable HTTP, the same tools
	// as `pollwarden mcp`), every other path the JSON API with its own
	// 404/405 answers.
	// One application for every door of the process: the API, the
	// console and /mcp each translate, and none holds the core otherwise.
	ops := operations.New(operations.Options{Controller: ctl, Contracts: set, Clock: env.clock(), Changes: changes,
		CredentialAvailable: env.credentialAvailable,
		CredentialHint:      "in the environment of pollwarden serve; set it there and restart the daemon (nothing was registered)",
		CallbackSecret:      func(ref string) (string, error) { return prober.ResolveSecret(ref, env.Getenv, os.ReadFile) },
		Logger:              log, FirstSteps: sched})
	mcpHandler := pwmcp.NewHTTPHandler(pwmcp.NewServer(pwmcp.Options{Ops: ops, TraceIncoming: tr.Tracer != nil,
		ProgressEvery: env.progress()}), tokens, log)
	mux := http.NewServeMux()
	mux.Handle(pwmcp.Path, mcpHandler)
	ui := console.New(console.Options{Ops: ops, Tokens: tokens, Logger: log, SecureCookies: secureCookies})
	mux.Handle(console.Path, ui)
	mux.HandleFunc("GET /{$}", console.RedirectRoot)
	mux.Handle("/", httpapi.NewHandler(httpapi.Options{Ops: ops, Tokens: tokens, Logger: log, Registry: reg,
		TraceIncoming: tr.Tracer != nil}))
	srv := newHTTPServer(mux, readTimeout)
	// Shutdown waits for open requests; MCP streams would never end.
	srv.RegisterOnShutdown(mcpHandler.Close)
	srv.RegisterOnShutdown(ui.Close)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	rl.set = set
	go reloadOnHUP(ctx, hup, rl, log)

	g := newGroup(ctx)
	g.start(sched.Run)
	g.start(func(ctx context.Context) error {
		<-runDecisionClock(ctx, ctl, set, log)
		return nil
	})
	// The dispatcher stops with the scheduler: attempts in flight finish
	// (each within the webhooks timeout) and are recorded.
	if hookRun != nil {
		g.start(hookRun)
	}
	if pruneAge > 0 {
		g.start(func(ctx context.Context) error {
			pruneLoop(ctx, env.clock(), st, pruneAge, log)
			return nil
		})
	}
	g.start(func(ctx context.Context) error { return serveHTTP(ctx, srv, ln) })
	log.Info("serving", "listen", ln.Addr().String(), "contracts", set.Names(), "traces_to", tr.Endpoint)
	env.warnShortSecrets(log, set)
	fmt.Fprintf(env.Stdout, "pollwarden serve: listening on http://%s\n", ln.Addr())
	err := g.wait()
	log.Info("stopped")
	return err
}

// serveHTTP serves ln until ctx ends, then shuts the server down: open
// requests are answered (within 30 seconds) before it returns. An error
// of Serve itself (the listener failed) is returned at once.
func serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := srv.Shutdown(shutCtx)
	<-served // http.ErrServerClosed, once Shutdown has closed ln
	return err
}

// reloadable is what SIGHUP re-reads: the contracts directory and the
// tokens file, each on its own (a bad tokens file does not stop a good
// contracts change, and the reverse).
type reloadable struct {
	set        *contract.Set
	tokens     *tokens.Set
	tokensPath string
}

// reloadOnHUP reloads on every SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, rl reloadable, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			rl.reload(log)
		}
	}
}

// reload re-reads each file; a bad one keeps what was loaded before and
// is reported, so a typo never locks everyone out or drops a contract.
func (rl reloadable) reload(log *slog.Logger) {
	if err := rl.set.Reload(); err != nil {
		log.Error("contracts reload refused; keeping the previous set", "error", err.Error())
	} else {
		log.Info("contracts reloaded", "contracts", rl.set.Names())
	}
	if rl.tokensPath == "" {
		return
	}
	next, err := tokens.Load(rl.tokensPath)
	if err != nil {
		log.Error("tokens reload refused; keeping the previous tokens", "error", err.Error())
		return
	}
	rl.tokens.Replace(next)
	log.Info("tokens reloaded")
}

// warnShortSecrets logs, per contract, a credential short enough to be
// found by chance in what providers send.
func (env Env) warnShortSecrets(log *slog.Logger, set *contract.Set) {
	for _, name := range set.Names() {
		if ex, ok := set.Get(name); ok {
			if w := prober.ShortSecretWarning(ex.Spec(), env.Getenv, os.ReadFile); w != "" {
				log.Warn(w)
			}
		}
	}
}
