// Package prober is the only code in pollwarden that talks to providers and
// the only code that ever holds a secret. It sends exactly one logical
// request per call (following allowed redirects), resolves the credential at
// request time, and hands back a Response from which every trace of the
// secret has been removed (R27): its texts are redacted, and its body is
// reachable only through Response.Facts, which parses it and redacts what
// the contract keeps. So nothing downstream — store, audit, API, MCP — can
// leak what it never received. It never logs.
package prober

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// Defaults used when a contract leaves a bound at zero. The contract package
// normally fills these in; the prober still refuses to be unbounded.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxBodyBytes = 1 << 20
	// MaxRedirects is how many redirects one call follows before refusing.
	MaxRedirects = 5
)

// callTimeout is one request's bound: the contract's status timeout, or
// DefaultTimeout when it is unset.
func callTimeout(c *pollwarden.ContractSpec) time.Duration {
	if c.Status.Timeout > 0 {
		return c.Status.Timeout
	}
	return DefaultTimeout
}

// Options configure a Prober. Only Now is required.
type Options struct {
	// Transport defaults to a clone of http.DefaultTransport with the
	// environment proxy turned off: an HTTP_PROXY picked up silently would
	// receive the credential header for plain-http providers.
	Transport http.RoundTripper
	// Getenv resolves env: references; default os.LookupEnv.
	Getenv func(string) (string, bool)
	// ReadFile resolves file: references; default os.ReadFile.
	ReadFile func(string) ([]byte, error)
	// Now stamps SentAt and ReceivedAt; required so tests and the
	// controller share one clock.
	Now func() time.Time
	// UserAgent is sent unless the contract's headers set one; default
	// "pollwarden".
	UserAgent string
}

// Prober sends status and action requests. It is safe for concurrent use.
type Prober struct {
	client    *http.Client
	getenv    func(string) (string, bool)
	readFile  func(string) ([]byte, error)
	now       func() time.Time
	userAgent string
	// tokens holds minted access tokens, in memory only.
	tokens tokenCache
	// cas holds the clients of contracts that trust their own CA.
	cas caClients
	// sessions holds the session ids of contracts with a handshake, in
	// memory only.
	sessions sessionCache
}

// New returns a Prober. It panics when opts.Now is nil, a programming error.
func New(opts Options) *Prober {
	if opts.Now == nil {
		panic("prober: Options.Now is required")
	}
	rt := opts.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.MaxResponseHeaderBytes = 64 << 10
		rt = t
	}
	p := &Prober{
		// Redirects are followed by hand (see call) so that the allowed-host
		// check and the credential header are decided per hop by us, not by
		// net/http's domain heuristics, which forward custom headers.
		client: &http.Client{
			Transport:     rt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		getenv:    opts.Getenv,
		readFile:  opts.ReadFile,
		now:       opts.Now,
		userAgent: opts.UserAgent,
	}
	if p.getenv == nil {
		p.getenv = os.LookupEnv
	}
	if p.readFile == nil {
		p.readFile = os.ReadFile
	}
	if p.userAgent == "" {
		p.userAgent = "pollwarden"
	}
	return p
}

// Response is what one call produced, already secret-free: its text
// fields are redacted and capped, and its body is reachable only through
// Facts.
//
// How to read it, in order: CredentialError set → nothing was sent, the
// credential could not be resolved. Otherwise Transport set → no usable
// answer (Status, when nonzero, is the last code seen: a refused redirect, or
// an answer whose body could not be read). Otherwise Status is the answer.
type Response struct {
	// Sent is true once the request was handed to the transport. False
	// means nothing left this process (credential unavailable, URL or host
	// refused before sending), so the call is not an ambiguous delivery.
	// A token endpoint that gave no token sets it too: that request left,
	// and the poll is a transport failure like an unreachable provider.
	Sent       bool
	SentAt     time.Time
	ReceivedAt time.Time
	Status     int
	// Transport is one of the pollwarden.Transport* classes, "" when an
	// HTTP answer arrived and was read.
	Transport string
	// TransportDetail is short and secret-free.
	TransportDetail string
	// RetryAfter is the raw Retry-After header of the last answer.
	RetryAfter string
	// RequestID is the provider's request id (contract header first).
	RequestID string
	// Location is the raw Location header of the last answer.
	Location string
	// ETag is the last answer's ETag header, redacted and cut.
	ETag string
	// Headers holds the last answer's values of the headers the
	// contract's rate_limit reads, by lower-case name, redacted and cut.
	Headers map[string]string
	// body is the answer's body as received; it is read only through
	// Facts, which removes the secret from what the contract keeps. It is
	// nil when BodyTooLarge or unreadable.
	body         *answerBody
	BodyTooLarge bool
	// CredentialError names the reference that failed, never the secret.
	CredentialError error
}

// answerBody keeps the raw bytes and what removes the secret from them
// together, out of reach of the rest of the program.
type answerBody struct {
	raw   []byte
	scrub *scrubber
}

// WithBody returns r carrying body, for a Response built outside a call
// (a replay, a fuzz test): no secret was sent, so none is removed.
func (r Response) WithBody(body []byte) Response {
	r.body = &answerBody{raw: body}
	return r
}

// Facts reduces the body with x, then removes the secret from every
// decoded string the facts keep, then applies the caps (see bound). The
// order matters: parsing first catches a secret the provider wrote
// JSON-escaped, and matching decoded strings rather than raw bytes keeps
// a short secret from rewriting the body around it (R27).
func (r Response) Facts(x *contract.Loaded) pollwarden.BodyFacts {
	var raw []byte
	var sc *scrubber
	if r.body != nil {
		raw, sc = r.body.raw, r.body.scrub
	}
	f := x.ExtractResponse(r.Status, r.Headers, raw)
	c := x.Spec()
	listed := listedStates(c)
	f.Problem = sc.text(f.Problem)
	if !listed[f.State] {
		f.State = sc.text(f.State)
	}
	// The provider's own word for the state (state.raw) is provider text
	// like any other, kept in the record and the story.
	f.ProviderState = sc.text(f.ProviderState)
	f.Error = sc.raw(f.Error)
	for path, v := range f.Fields {
		f.Fields[path] = sc.value(v)
	}
	f.PollAfter, f.NextCheckAt, f.JobExpiresAt = sc.value(f.PollAfter), sc.value(f.NextCheckAt), sc.value(f.JobExpiresAt)
	bound(&f, c, listed)
	return f
}

// RateLimit reads the contract's rate-limit signals (a header, a body
// field, a reset time) from the answer as received, and returns its texts
// with the secret removed and cut like every kept field.
func (r Response) RateLimit(x *contract.Loaded, at time.Time) (why, retryAfter string) {
	var raw []byte
	var sc *scrubber
	if r.body != nil {
		raw, sc = r.body.raw, r.body.scrub
	}
	why, retryAfter = x.RateLimit(r.Status, r.Headers, raw, at)
	return cut(sc.text(why), maxDetail), cut(sc.text(retryAfter), maxRetryAfter)
}

// Status sends the contract's status request to statusURL (the contract's
// URL with the job id already filled in), with the headers that hold no
// template.
func (p *Prober) Status(ctx context.Context, c *pollwarden.ContractSpec, statusURL string) Response {
	return p.StatusFor(ctx, c, statusURL, nil, contract.FixedHeaders(c))
}

// StatusWithBody is Status for a contract whose status call sends a body
// (a JSON-RPC tasks/get, an AWS POST read): body, already built by
// contract.StatusBody, is sent as application/json on every hop that
// keeps the method.
func (p *Prober) StatusWithBody(ctx context.Context, c *pollwarden.ContractSpec, statusURL string, body []byte) Response {
	return p.StatusFor(ctx, c, statusURL, body, contract.FixedHeaders(c))
}

// StatusFor is the status request of one operation: body (nil for
// none) and headers as contract.RequestHeaders filled them in.
func (p *Prober) StatusFor(ctx context.Context, c *pollwarden.ContractSpec, statusURL string, body []byte, headers map[string]string) Response {
	method := c.Status.Method
	if method == "" {
		method = http.MethodGet
	}
	return p.call(ctx, c, method, statusURL, body, headers)
}

// Action sends a provider action (cancel) to url with a.Method (default
// POST), body (nil for none) and one operation's headers, under the
// status call's credential, session, hosts, timeout and body cap.
func (p *Prober) Action(ctx context.Context, c *pollwarden.ContractSpec, a *pollwarden.Action, url string, body []byte, headers map[string]string) Response {
	method := a.Method
	if method == "" {
		method = http.MethodPost
	}
	return p.call(ctx, c, method, url, body, headers)
}

// call wraps send so that redaction, then the caps, run on every path
// out.
func (p *Prober) call(ctx context.Context, c *pollwarden.ContractSpec, method, rawURL string, body []byte, headers map[string]string) Response {
	auth, err := p.authorize(ctx, c)
	var secrets []string
	if auth != nil {
		secrets = auth.secrets
	}
	sc := newScrubber(secrets, c)
	if err != nil {
		var sf *sessionFailure
		if errors.As(err, &sf) {
			return sessionResponse(sf, sc, p.now())
		}
		var tf *tokenFailure
		if !errors.As(err, &tf) {
			return Response{CredentialError: err}
		}
		// A request did leave (to the token endpoint): the poll is a
		// transport failure, retried and counted like an unreachable
		// provider, not a call that could not be made at all.
		now := p.now()
		return Response{Sent: true, SentAt: now, ReceivedAt: now, Transport: tf.class, TransportDetail: cut(sc.text(tf.detail), maxDetail)}
	}
	resp := p.send(ctx, c, method, rawURL, auth, body, headers)
	if resp.Transport == "" {
		auth.answered(resp.Status)
	}
	if auth != nil && auth.session != "" && resp.Transport == "" && resp.Status == http.StatusNotFound {
		// A 404 to a session id is the provider's word that the session
		// ended (MCP streamable HTTP): the next request opens a new one.
		p.sessions.forget(c, auth.session)
		resp.body = nil
		resp.Transport, resp.TransportDetail = pollwarden.TransportOther, "the provider ended the session (404); the next request opens a new one"
	}
	resp.TransportDetail = cut(sc.text(resp.TransportDetail), maxDetail)
	resp.RetryAfter = cut(sc.text(resp.RetryAfter), maxRetryAfter)
	resp.RequestID = cut(sc.text(resp.RequestID), maxRequestIDLen)
	resp.Location = cut(sc.text(resp.Location), maxLocation)
	resp.ETag = cut(sc.text(resp.ETag), maxRequestIDLen)
	for k, v := range resp.Headers {
		resp.Headers[k] = cut(sc.text(v), maxRequestIDLen)
	}
	if resp.body != nil {
		resp.body.scrub = sc
	}
	return resp
}
