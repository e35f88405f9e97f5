package scheduler

import (
	"context"
	"fmt"
	"net/http"

	"golang.org/x/time/rate"

	"github.com/pollwarden/pollwarden/contract"
)

// ceilingBurst is the per-contract bucket's size: one request. After a
// quiet spell a provider sees one request at once, then one every
// 1/max_requests_per_second, so in any window of T seconds at most
// 1 + T × max_requests_per_second from this process.
const ceilingBurst = 1

// ceiling is one contract's request-rate ceiling
// (limits.max_requests_per_second), per process. start is taken when the
// scheduler starts a step, so steps of a throttled contract do not fill
// the concurrency slots waiting; send is taken by Transport at the moment
// each request leaves, so the few milliseconds between a step's start and
// its request (the lease and the reservation are written first) cannot
// bunch requests above the ceiling.
type ceiling struct {
	perSecond   float64
	start, send *rate.Limiter
}

// ceiling returns ex's ceiling, following a reload that changed it; nil
// when the contract sets none.
func (l *loop) ceiling(ex *contract.Loaded) *ceiling {
	ct := ex.Spec()
	r := ct.Limits.MaxRequestsPerSecond
	c := l.ceilings[ct.Name]
	switch {
	case r <= 0:
		delete(l.ceilings, ct.Name)
		return nil
	case c == nil:
		c = &ceiling{perSecond: r,
			start: rate.NewLimiter(rate.Limit(r), ceilingBurst),
			send:  rate.NewLimiter(rate.Limit(r), ceilingBurst)}
		l.ceilings[ct.Name] = c
	case c.perSecond != r:
		c.start.SetLimit(rate.Limit(r))
		c.send.SetLimit(rate.Limit(r))
		c.perSecond = r
	}
	return c
}

type sendLimiterKey struct{}

// withCeiling lets Transport find the step's contract ceiling.
func withCeiling(ctx context.Context, c *ceiling) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, sendLimiterKey{}, c.send)
}

// Transport wraps base for the controller's prober
// (prober.Options.Transport) so that a request sent by a step the
// scheduler started waits for its contract's ceiling at the moment it
// leaves; every other request passes untouched. Without it the ceiling is
// still applied when steps start, and the provider may then see a request
// or two more than the ceiling in a second, from the jitter of the writes
// each step makes before sending. A redirect hop is a request too and
// takes its own token, so a ceiling slower than one request per
// status.timeout can make a redirected call time out.
//
// A nil base means BaseTransport(DefaultConcurrency).
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = BaseTransport(DefaultConcurrency)
	}
	return transport{base}
}

// BaseTransport is what the prober uses by default (http.DefaultTransport
// without the environment's proxy, 64 KiB of response headers) but keeping
// up to concurrency idle connections per host: a scheduler keeps that many
// requests in flight to one provider, and with fewer idle slots every
// answer beyond them closes its connection and the next request dials a
// new one (a TCP handshake, and a TLS one, per request).
func BaseTransport(concurrency int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxResponseHeaderBytes = 64 << 10
	t.MaxIdleConnsPerHost = max(concurrency, 2)
	return t
}

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if lim, ok := req.Context().Value(sendLimiterKey{}).(*rate.Limiter); ok {
		if err := lim.Wait(req.Context()); err != nil {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper closes the body, even on error
			}
			return nil, fmt.Errorf("waiting for the contract's request-rate ceiling: %w", err)
		}
	}
	return t.base.RoundTrip(req)
}
