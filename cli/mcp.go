package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	pwmcp "github.com/pollwarden/pollwarden/mcp"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/webhook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

type mcpFlags struct {
	store, contracts, auditKey, webhooks, otlpEndpoint string
	concurrency                                        int
}

func mcpCmd(env Env) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp --contracts DIR [--store PATH|postgres://…] [--webhooks FILE] [--otlp-endpoint URL]",
		Short: "Serve the MCP tools on stdio, with an embedded scheduler, for an agent host",
		Long: `mcp speaks the Model Context Protocol on stdin/stdout, for an agent host
that starts it from its configuration. Tools: watch_job, get_job, wait_job,
list_jobs, request_extension. Like serve, it runs its own scheduler, which
sends every status request on the contract's schedule; wait_job only waits.
No tool grants authority. Logs go to stderr. SIGHUP reloads the contracts;
the server stops when the host closes stdin. See docs/mcp.md.

--webhooks FILE sends the same notifications as serve (signed JSON, Slack,
e-mail; docs/webhooks.md) from this process. Escalation reminders and
expiries (the contract's escalation block) run here as in serve.

--otlp-endpoint URL (or the standard OTEL_EXPORTER_OTLP_ENDPOINT) exports
OpenTelemetry traces over OTLP/HTTP as serve does (docs/tracing.md); a
tool call's _meta.traceparent, when the host sends one, is the parent of
its spans. Off by default; what is buffered is sent when the server stops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return env.runMCP(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	fl.StringVar(&f.contracts, "contracts", "", "directory of contract files (*.yaml)")
	fl.StringVar(&f.auditKey, "audit-key", "", auditKeyHelp)
	fl.StringVar(&f.webhooks, "webhooks", "", "webhooks file: receivers of escalations, reminders and outcomes (docs/webhooks.md)")
	fl.IntVar(&f.concurrency, "concurrency", scheduler.DefaultConcurrency, "status requests in flight at once")
	otlpFlag(fl, &f.otlpEndpoint)
	return cmd
}

func (env Env) runMCP(ctx context.Context, f mcpFlags) error {
	switch {
	case f.contracts == "":
		return usage(errors.New("--contracts is required"))
	case f.concurrency < 1:
		return usage(errors.New("--concurrency must be at least 1"))
	}
	set, err := contract.LoadDir(f.contracts)
	if err != nil {
		return usage(err)
	}
	var hooks *webhook.Config
	if f.webhooks != "" {
		if hooks, err = env.loadWebhooks(f.webhooks); err != nil {
			return usage(err)
		}
	}
	tr, flushTraces, err := env.startTracing(ctx, f.otlpEndpoint)
	if err != nil {
		return err
	}
	defer flushTraces()
	st, _, err := env.openStoreKey(ctx, f.store, f.auditKey, true)
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.NewJSONHandler(env.Stderr, nil))
	return env.serveMCP(ctx, st, set, hooks, f.concurrency, log, tr.Tracer)
}

// serveMCP wires the MCP door as serve wires the HTTP one: one controller
// shared by the tools and the scheduler, its changes fanned out to
// wait_job and to the scheduler.
func (env Env) serveMCP(ctx context.Context, st pollwarden.Store, set *contract.Set, hooks *webhook.Config, concurrency int, log *slog.Logger, tr trace.Tracer) error {
	e := env.newEngine(st, set, concurrency, log, nil, tr)
	ctl, sched, changes := e.ctl, e.sched, e.changes
	hookRun := func(context.Context) error { return nil }
	if hooks != nil {
		d, err := env.newDispatcher(st, hooks, prometheus.NewRegistry(), log)
		if err != nil {
			return err
		}
		if err := d.Init(ctx); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		hookRun = d.Run
	}
	ops := operations.New(operations.Options{Controller: ctl, Contracts: set, Clock: env.clock(), Changes: changes,
		CredentialAvailable: env.credentialAvailable,
		CredentialHint:      `in the environment of the pollwarden mcp server; add it to the "env" of this server in the MCP host's configuration and restart it`,
		Logger:              log, FirstSteps: sched})
	srv := pwmcp.NewServer(pwmcp.Options{Ops: ops, Owner: env.localOwner("mcp"), TraceIncoming: tr != nil, ProgressEvery: env.progress()})

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadOnHUP(ctx, hup, reloadable{set: set}, log)

	schedCtx, stopSched := context.WithCancel(ctx)
	defer stopSched()
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(schedCtx) }()
	hooksDone := make(chan error, 1)
	go func() { hooksDone <- hookRun(schedCtx) }()
	clockDone := runDecisionClock(schedCtx, ctl, set, log)
	log.Info("mcp serving on stdio", "contracts", set.Names())

	t := pwmcp.TaskTransport(&sdk.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}})
	err := srv.Run(ctx, t)
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		err = nil // the host closed stdin or a signal asked us to stop
	}
	stopSched()
	if serr := <-schedDone; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = serr
	}
	if herr := <-hooksDone; err == nil {
		err = herr
	}
	<-clockDone
	log.Info("stopped")
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
