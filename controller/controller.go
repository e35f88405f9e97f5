// Package controller runs the decision core against the world: it loads and
// saves records through a pollwarden.Store, holds the lease around one
// status request, sends it through the prober and persists what package
// policy decided. Doors do not call it directly: they call package
// operations, which checks their input and the caller's rights and then
// drives operations through it, so no door re-implements a rule.
package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// Options configures a Controller. Store, Prober, Clock and Rand are
// required.
type Options struct {
	Store  pollwarden.Store
	Prober *prober.Prober
	Clock  pollwarden.Clock
	Rand   policy.Rand
	// Owner names this process in leases; defaults to host:pid.
	Owner string
	// LeaseRetry is how long to wait when another owner holds the lease;
	// defaults to 200ms.
	LeaseRetry time.Duration
	// LeaseSlack is how much longer than two status timeouts a lease
	// lasts, for persisting the answer; defaults to DefaultLeaseSlack.
	// Shorter frees a dead owner's operations sooner (tests that kill a
	// process set it low); too short lets a slow store write lose its
	// lease, which fails safe: the write is refused, nothing is sent twice.
	LeaseSlack time.Duration
	// OnChange, when set, is called after every saved change of a record,
	// with the record as saved, so a door can wake long-polls and a
	// scheduler can look again. It must not block.
	OnChange func(op *pollwarden.Operation)
	// Observer, when set, is told what was saved and how steps went, for
	// metrics. Its methods must not block.
	Observer Observer
	// Tracer, when set, gets a span for each step (with its claim, status
	// request and record) and each decision; nil traces nothing. The
	// status request's span is what status.propagate_trace sends.
	Tracer trace.Tracer
}

// Observer sees the controller's facts as they happen; package metrics
// turns them into Prometheus series, so this package imports none.
type Observer interface {
	// Saved is called after every saved change with the record as saved
	// and the audit events appended with it: the response codes, delay
	// sources, escalation reasons and outcomes are read from these.
	Saved(op *pollwarden.Operation, events []pollwarden.Event)
	// StepDone is called after a Step that sent a status request, with
	// how long the whole step took (lease, request, persistence).
	StepDone(op *pollwarden.Operation, took time.Duration)
	// LeaseConflict is called when a Step finds the operation's lease
	// held by another owner.
	LeaseConflict(opID string)
}

// Controller drives operations. It is safe for concurrent use on distinct
// operations; the store's lease keeps one owner per operation across
// goroutines and processes alike.
type Controller struct {
	store  pollwarden.Store
	prober *prober.Prober
	clock  pollwarden.Clock
	rand   policy.Rand
	// factors draws the jitter factors of the operations this process
	// creates (policy.FactorSequence).
	factors    *policy.FactorSequence
	owner      string
	leaseRetry time.Duration
	leaseSlack time.Duration
	onChange   func(*pollwarden.Operation)
	observer   Observer
	tracer     trace.Tracer
	traced     bool
	callbacks  callbackLedgers
	// kept holds the contracts operations run under, by fingerprint.
	kept *contract.Kept
}

// New checks opts and returns a Controller.
func New(opts Options) *Controller {
	if opts.Store == nil || opts.Prober == nil || opts.Clock == nil || opts.Rand == nil {
		panic("controller.New: Store, Prober, Clock and Rand are required")
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if opts.LeaseRetry <= 0 {
		opts.LeaseRetry = 200 * time.Millisecond
	}
	if opts.LeaseSlack <= 0 {
		opts.LeaseSlack = DefaultLeaseSlack
	}
	r := &lockedRand{r: opts.Rand}
	return &Controller{store: opts.Store, prober: opts.Prober, clock: opts.Clock, rand: r, factors: policy.NewFactorSequence(r),
		owner: opts.Owner, leaseRetry: opts.LeaseRetry, leaseSlack: opts.LeaseSlack, onChange: opts.OnChange, observer: opts.Observer,
		tracer: defaultTracer(opts.Tracer), traced: opts.Tracer != nil, kept: contract.NewKept(opts.Store)}
}

// Kept finds the contract each operation runs under, compiled once per
// fingerprint: the one cache of this controller's process.
func (c *Controller) Kept() *contract.Kept { return c.kept }

// Store returns the controller's store, for doors that only read.
func (c *Controller) Store() pollwarden.Store { return c.store }

// Create stores fresh, built by policy.NewOperation from the request
// package operations judged, with its first events and, in the same
// transaction, the contract it runs under. It writes nothing and returns
// pollwarden.ErrExists when the id is taken (another request created it
// since the caller read the store) and pollwarden.ErrPruned when it
// belonged to a pruned operation: resuming is the caller's to judge,
// against the record it reads, so there is one matcher.
func (c *Controller) Create(ctx context.Context, ex *contract.Loaded, fresh *pollwarden.Operation, events []pollwarden.Event) error {
	if err := c.createUnder(ctx, ex, fresh, events); err != nil {
		return err
	}
	c.changed(fresh, events)
	return nil
}

// Factors is the random source that draws the jitter factor of each
// operation this process creates (policy.NewParams.Rand).
func (c *Controller) Factors() policy.Rand { return c.factors }

// Clock is the controller's clock, which every record it saves is
// stamped with.
func (c *Controller) Clock() pollwarden.Clock { return c.clock }

func (c *Controller) changed(op *pollwarden.Operation, events []pollwarden.Event) {
	if c.observer != nil {
		c.observer.Saved(op.Clone(), events)
	}
	if c.onChange != nil {
		c.onChange(op.Clone())
	}
}

// lockedRand lets steps of different operations draw jitter at once: the
// usual sources (math/rand/v2's *Rand) are not safe for concurrent use.
type lockedRand struct {
	mu sync.Mutex
	r  policy.Rand
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

// Start builds the operation p asks for under ex's contract and creates it
// (Create), for an embedder that drives the controller without package
// operations, as the demo and tests do. It never resumes: a taken id is
// pollwarden.ErrExists.
func (c *Controller) Start(ctx context.Context, ex *contract.Loaded, p policy.NewParams) (*pollwarden.Operation, error) {
	if p.Rand == nil {
		p.Rand = c.factors
	}
	fresh, events, err := policy.NewOperation(ex.Spec(), p, c.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, ex, fresh, events); err != nil {
		return nil, err
	}
	return fresh, nil
}
