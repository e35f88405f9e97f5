package cli

import (
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/changes"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/metrics"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/scheduler"
)

// engine is what the long-running doors (serve, mcp) share: one controller,
// a scheduler stepping due operations, and the controller's changes fanned
// out to long-polls (wait_job, ?wait=) and to the scheduler.
type engine struct {
	ctl     *controller.Controller
	sched   *scheduler.Scheduler
	changes *changes.Feed
}

// newEngine wires an engine on st; m may be nil (no metrics), and so may
// tr (no traces).
func (env Env) newEngine(st pollwarden.Store, set *contract.Set, concurrency int, log *slog.Logger, m *metrics.Metrics, tr trace.Tracer) *engine {
	e := &engine{changes: changes.NewFeed()}
	opts := controller.Options{
		Store: st, Clock: env.clock(), Rand: newRand(), LeaseSlack: env.slack(), Tracer: tr,
		Prober: prober.New(prober.Options{Now: env.clock().Now, Getenv: env.Getenv, Transport: scheduler.Transport(scheduler.BaseTransport(concurrency))}),
		OnChange: func(op *pollwarden.Operation) {
			e.changes.Publish(op)
			e.sched.Changed(op)
		},
	}
	sopts := scheduler.Options{Store: st, Contracts: set, Clock: env.clock(), Concurrency: concurrency, Logger: log}
	if m != nil {
		opts.Observer, sopts.Observer = m, m
	}
	e.ctl = controller.New(opts)
	sopts.Controller = e.ctl
	e.sched = scheduler.New(sopts)
	return e
}
