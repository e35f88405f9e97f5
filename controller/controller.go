// Package controller runs the decision core against the world: it loads and
// saves records through a pollwarden.Store, holds the lease around one
// status request, sends it through the prober and persists what package
// policy decided. Doors do not call it directly: they call package
// operations, which checks their input and the caller's rights and then
// drives operations through it, so no door re-implements a rule.
package controller

import (
	"context"
	"errors"
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

// Submit creates the operation, or resumes the stored one with the same id
// when it is for the same contract, job and request fingerprint (R4). A
// mismatched resume is refused with ErrInvalid before anything is sent.
// created is false on a resume; counters are never reset (R11).
func (c *Controller) Submit(ctx context.Context, ex *contract.Extractor, p policy.NewParams) (op *pollwarden.Operation, created bool, err error) {
	ct := ex.Contract()
	now := c.clock.Now()
	if p.Rand == nil {
		p.Rand = c.factors
	}
	fresh, events, err := policy.NewOperation(ct, p, now)
	if err != nil {
		return nil, false, err
	}
	existing, err := c.store.OperationGet(ctx, p.ID)
	switch {
	case errors.Is(err, pollwarden.ErrNotFound):
		return c.create(ctx, ex, p, fresh, events)
	case err != nil:
		return nil, false, err
	}
	if err := sameRequest(existing, fresh); err != nil {
		return nil, false, err
	}
	return existing, false, nil
}

// SubmitNew is Submit for an id its caller has just read and found free
// (a door's create checks that first): it creates the record without
// reading the store again, and resumes like Submit when another request
// took the id meanwhile.
func (c *Controller) SubmitNew(ctx context.Context, ex *contract.Extractor, p policy.NewParams) (op *pollwarden.Operation, created bool, err error) {
	if p.Rand == nil {
		p.Rand = c.factors
	}
	fresh, events, err := policy.NewOperation(ex.Contract(), p, c.clock.Now())
	if err != nil {
		return nil, false, err
	}
	return c.create(ctx, ex, p, fresh, events)
}

// create writes fresh with its first events, or resumes the operation
// another process created under its id first.
func (c *Controller) create(ctx context.Context, ex *contract.Extractor, p policy.NewParams, fresh *pollwarden.Operation, events []pollwarden.Event) (*pollwarden.Operation, bool, error) {
	err := c.createUnder(ctx, ex, fresh, events)
	if errors.Is(err, pollwarden.ErrExists) {
		return c.Submit(ctx, ex, p) // created first elsewhere: resume that one
	}
	if err != nil {
		return fresh, false, err
	}
	c.changed(fresh, events)
	return fresh, true, nil
}

func sameRequest(stored, asked *pollwarden.Operation) error {
	if stored.Contract == asked.Contract && stored.ProviderJobID == asked.ProviderJobID &&
		stored.StatusURL == asked.StatusURL && stored.Fingerprint == asked.Fingerprint {
		return nil
	}
	return fmt.Errorf("%w: operation %s was created for contract %q, job %q (fingerprint %s); refusing to resume it with contract %q, job %q (fingerprint %s)",
		pollwarden.ErrInvalid, stored.ID, stored.Contract, jobOf(stored), stored.Fingerprint[:12],
		asked.Contract, jobOf(asked), asked.Fingerprint[:12])
}

func jobOf(op *pollwarden.Operation) string {
	if op.ProviderJobID != "" {
		return op.ProviderJobID
	}
	return op.StatusURL
}

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
