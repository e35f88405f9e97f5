package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// Rand is the jitter source (math/rand/v2's *Rand fits); the dispatcher
// serialises calls to it.
type Rand interface{ Float64() float64 }

// Observer counts deliveries (package metrics implements it). result is
// "delivered", "retry" or "dead".
type Observer interface {
	WebhookAttempt(endpoint, result string)
}

// Options configures a Dispatcher. Store, Outbox, Config, Owner, Clock, Rand
// and Resolve are required.
type Options struct {
	Store  pollwarden.Store
	Outbox pollwarden.Outbox
	Config *Config
	// Owner names this dispatcher in claims; unique per process.
	Owner string
	Clock pollwarden.Clock
	Rand  Rand
	// Resolve reads a secret reference (prober.ResolveSecret over the
	// process environment); it is called at every attempt.
	Resolve func(ref string) (string, error)
	// Client sends the POSTs; default: no redirects followed, no timeout
	// beyond Config.Timeout.
	Client   *http.Client
	Logger   *slog.Logger
	Observer Observer
	// Poll is the pause between rounds that found nothing to do (default 1 s).
	Poll time.Duration
	// Batch is how many messages one round claims (default 16).
	Batch int
}

// Dispatcher turns audit events into outbox messages and delivers them.
// Several dispatchers (replicas) may share one store: the cursor's
// compare-and-set and the claims keep each message enqueued once and sent
// by one owner at a time.
type Dispatcher struct {
	store     pollwarden.Store
	outbox    pollwarden.Outbox
	cfg       *Config
	endpoints map[string]Endpoint
	names     []string
	owner     string
	clock     pollwarden.Clock
	randMu    sync.Mutex
	rand      Rand
	resolve   func(string) (string, error)
	client    *http.Client
	log       *slog.Logger
	obs       Observer
	poll      time.Duration
	batch     int
}

// New checks opts and builds a Dispatcher.
func New(opts Options) (*Dispatcher, error) {
	if opts.Store == nil || opts.Outbox == nil || opts.Config == nil || opts.Owner == "" || opts.Clock == nil ||
		opts.Rand == nil || opts.Resolve == nil {
		return nil, errors.New("webhook.New: Store, Outbox, Config, Owner, Clock, Rand and Resolve are required")
	}
	d := &Dispatcher{store: opts.Store, outbox: opts.Outbox, cfg: opts.Config, endpoints: map[string]Endpoint{},
		owner: opts.Owner, clock: opts.Clock, rand: opts.Rand, resolve: opts.Resolve, client: opts.Client,
		log: opts.Logger, obs: opts.Observer, poll: opts.Poll, batch: opts.Batch}
	for _, e := range opts.Config.Endpoints {
		d.endpoints[e.Name] = e
		d.names = append(d.names, e.Name)
	}
	if d.client == nil {
		d.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.poll <= 0 {
		d.poll = time.Second
	}
	if d.batch <= 0 {
		d.batch = 16
	}
	return d, nil
}

// claimTTL outlives an attempt with room to record its result; a claim left
// by a dead process comes back after it.
func (d *Dispatcher) claimTTL() time.Duration { return 2*d.cfg.Timeout + 5*time.Second }

// Run enqueues and delivers until ctx ends; attempts in flight then finish
// (each bounded by the timeout) before Run returns.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		n, err := d.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Error("webhook dispatcher", "error", err.Error())
		}
		if ctx.Err() != nil {
			return nil
		}
		if n > 0 && err == nil {
			continue
		}
		if d.clock.Sleep(ctx, d.poll) != nil {
			return nil
		}
	}
}

// Tick is one round: enqueue every new audit event, then claim one batch
// of due messages and attempt each. It returns the number of attempts.
func (d *Dispatcher) Tick(ctx context.Context) (int, error) {
	for {
		more, err := d.enqueue(ctx)
		if err != nil {
			return 0, fmt.Errorf("enqueue: %w", err)
		}
		if !more {
			break
		}
	}
	msgs, err := d.outbox.OutboxClaim(ctx, pollwarden.OutboxClaimParams{Owner: d.owner, Endpoints: d.names,
		Now: d.clock.Now(), TTL: d.claimTTL(), Limit: d.batch})
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	// An attempt, once claimed, runs to its end even if ctx ends: its
	// result is recorded, so a stop never leaves a sent message unrecorded
	// for longer than the timeout.
	actx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Go(func() { d.attempt(actx, m) })
	}
	wg.Wait()
	return len(msgs), nil
}

// attempt POSTs one message and records the result.
func (d *Dispatcher) attempt(ctx context.Context, m pollwarden.OutboxMessage) {
	ep := d.endpoints[m.Endpoint]
	at := d.clock.Now()
	status, retryAfter, err := d.send(ctx, ep, m, at)
	p := pollwarden.OutboxSettleParams{Seq: m.Seq, Owner: d.owner, Attempt: m.Attempts, LastStatus: status, Now: d.clock.Now()}
	log := d.log.With("endpoint", ep.Name, "webhook_id", m.ID, "type", m.Type, "operation_id", m.OperationID, "attempt", m.Attempts)
	switch {
	case err == nil:
		p.Status = pollwarden.OutboxDelivered
	case m.Attempts >= d.cfg.Retry.Attempts:
		p.Status, p.LastError = pollwarden.OutboxDead, display.Cut(err.Error(), 300)
	default:
		p.Status, p.LastError = pollwarden.OutboxPending, display.Cut(err.Error(), 300)
		p.NextAttemptAt = p.Now.Add(d.delay(m.Attempts, retryAfter))
	}
	serr := d.outbox.OutboxSettle(ctx, p)
	switch {
	case errors.Is(serr, pollwarden.ErrLeaseLost):
		log.Warn("webhook claim expired before its result was recorded; another attempt will follow", "status", status)
		return
	case serr != nil:
		log.Error("webhook result not recorded; the claim expires and the message is sent again", "error", serr.Error())
		return
	}
	result := "delivered"
	switch p.Status {
	case pollwarden.OutboxDelivered:
		log.Info("webhook delivered", "status", status)
	case pollwarden.OutboxDead:
		result = "dead"
		log.Error("webhook dead: no more attempts", "status", status, "error", p.LastError)
	default:
		result = "retry"
		log.Warn("webhook attempt failed", "status", status, "error", p.LastError, "next_attempt_at", p.NextAttemptAt)
	}
	if d.obs != nil {
		d.obs.WebhookAttempt(ep.Name, result)
	}
}

// post sends one signed attempt. A 2xx answer is success; anything else,
// including a redirect, is an error, with the answer's Retry-After.
func (d *Dispatcher) post(ctx context.Context, ep Endpoint, m pollwarden.OutboxMessage, at time.Time) (int, time.Duration, error) {
	secret, err := d.resolve(ep.Secret)
	if err != nil {
		return 0, 0, fmt.Errorf("signing secret: %w", err)
	}
	key, err := ParseSecret(secret)
	if err != nil {
		return 0, 0, fmt.Errorf("signing secret %s %w", ep.Secret, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(m.Body))
	if err != nil {
		return 0, 0, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pollwarden-webhooks")
	req.Header.Set(HeaderID, m.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(key, m.ID, at, m.Body))
	return d.answer(d.client.Do(req))
}

// maxRetryAfter caps a receiver's Retry-After, so one answer cannot park a
// message for years.
const maxRetryAfter = 24 * time.Hour

// delay is the wait after failed attempt n: uniform in [50%, 100%] of
// min(Max, Base·2^(n-1)), and at least the receiver's Retry-After (capped).
func (d *Dispatcher) delay(n int, retryAfter time.Duration) time.Duration {
	r := d.cfg.Retry
	raw := r.Max
	if n-1 < 62 {
		if f := float64(r.Base) * math.Pow(2, float64(n-1)); f < float64(r.Max) {
			raw = time.Duration(f)
		}
	}
	d.randMu.Lock()
	u := d.rand.Float64()
	d.randMu.Unlock()
	wait := raw/2 + time.Duration(u*float64(raw-raw/2))
	return max(wait, min(retryAfter, maxRetryAfter))
}

// answer reduces a receiver's answer to what the outbox keeps: the status,
// the receiver's Retry-After (a minimum before the next attempt) and an
// error for anything but 2xx. Every message format is sent through it.
func (d *Dispatcher) answer(resp *http.Response, err error) (int, time.Duration, error) {
	if err != nil {
		// The URL may carry a token (many receivers put one in the
		// path): keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	var ra time.Duration
	if v := resp.Header.Get("Retry-After"); v != "" {
		if w, err := pollwarden.ParseRetryAfter(v, d.clock.Now()); err == nil {
			ra = w
		}
	}
	return resp.StatusCode, ra, fmt.Errorf("HTTP %d", resp.StatusCode)
}
