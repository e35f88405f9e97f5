package prober

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// maxSessionIDLen bounds a session id a provider hands out: one that
// could fill memory is refused as a failed handshake.
const maxSessionIDLen = 1024

// sessionCache holds provider session ids in memory only, one per
// contract, status URL and credential: a restart opens a new session, as
// a client restarting would.
type sessionCache struct {
	mu sync.Mutex
	m  map[string]*sessionEntry
}

type sessionEntry struct {
	mu sync.Mutex // one handshake at a time per session
	id string
}

func sessionKey(c *pollwarden.ContractSpec) string {
	ref := ""
	if c.Status.Credential != nil {
		ref = c.Status.Credential.Ref
	}
	return c.Name + "\x00" + c.Status.Session.URL + "\x00" + ref
}

func (sc *sessionCache) entry(c *pollwarden.ContractSpec) *sessionEntry {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.m == nil {
		sc.m = map[string]*sessionEntry{}
	}
	k := sessionKey(c)
	e := sc.m[k]
	if e == nil {
		e = &sessionEntry{}
		sc.m[k] = e
	}
	return e
}

// forget drops the contract's session after the provider said it ended.
func (sc *sessionCache) forget(c *pollwarden.ContractSpec, id string) {
	e := sc.entry(c)
	e.mu.Lock()
	if e.id == id {
		e.id = ""
	}
	e.mu.Unlock()
}

// sessionFailure is a handshake that gave no session: the request it
// prepared was not sent. A non-2xx answer stands for the poll's (a 401
// is the credential refused); otherwise class says what failed.
type sessionFailure struct {
	status        int
	retryAfter    string
	class, detail string
}

func (e *sessionFailure) Error() string {
	if e.detail != "" {
		return e.detail
	}
	return fmt.Sprintf("the session handshake answered %d", e.status)
}

// withSession returns auth wrapped so that every request also carries
// the contract's session header, opening the session first when none is
// held. auth may be nil (a contract without a credential).
func (p *Prober) withSession(ctx context.Context, c *pollwarden.ContractSpec, auth *authorizer) (*authorizer, error) {
	s := c.Status.Session
	e := p.sessions.entry(c)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.id == "" {
		id, err := p.openSession(ctx, c, auth)
		if err != nil {
			return auth, err
		}
		e.id = id
	}
	id := e.id
	out := &authorizer{session: id, apply: func(req *http.Request, body []byte) error {
		req.Header.Set(s.Header, id)
		if auth != nil && auth.apply != nil {
			return auth.apply(req, body)
		}
		return nil
	}}
	if auth != nil {
		out.secrets, out.refused = auth.secrets, auth.refused
	}
	// The session id is a bearer for the session: kept out of everything
	// the provider sends back, like the credential.
	out.secrets = append(out.secrets, id)
	return out, nil
}

// openSession sends the handshake and, once the session id is known, the
// notification. Neither follows a redirect.
func (p *Prober) openSession(ctx context.Context, c *pollwarden.ContractSpec, auth *authorizer) (string, error) {
	s := c.Status.Session
	r, err := p.sessionRequest(ctx, c, auth, []byte(s.Body), "")
	if err != nil {
		return "", err
	}
	id := r.Header.Get(s.Header)
	switch {
	case id == "":
		return "", &sessionFailure{class: pollwarden.TransportOther,
			detail: fmt.Sprintf("the session handshake's answer has no %s header", s.Header)}
	case len(id) > maxSessionIDLen:
		return "", &sessionFailure{class: pollwarden.TransportOther,
			detail: fmt.Sprintf("the session handshake's %s header is longer than %d bytes", s.Header, maxSessionIDLen)}
	}
	if s.Notify != "" {
		if _, err := p.sessionRequest(ctx, c, auth, []byte(s.Notify), id); err != nil {
			return "", err
		}
	}
	return id, nil
}

// sessionRequest sends one handshake request and drains its answer; a
// non-2xx answer is a sessionFailure.
func (p *Prober) sessionRequest(ctx context.Context, c *pollwarden.ContractSpec, auth *authorizer, body []byte, id string) (*http.Response, error) {
	s := c.Status.Session
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &sessionFailure{class: pollwarden.TransportOther, detail: "the session url is not an absolute http(s) url; nothing sent"}
	}
	if err := contract.CheckOrigin(c, u.String()); err != nil {
		return nil, &sessionFailure{class: pollwarden.TransportRedirect, detail: "session: " + err.Error() + "; nothing sent"}
	}
	client, err := p.clientFor(c)
	if err != nil {
		return nil, &sessionFailure{class: pollwarden.TransportTLS, detail: err.Error() + "; nothing sent"}
	}
	timeout := callTimeout(c)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, s.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, &sessionFailure{class: pollwarden.TransportOther, detail: "cannot build the session request: " + err.Error()}
	}
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range contract.FixedHeaders(c) {
		req.Header.Set(k, v)
	}
	if id != "" {
		req.Header.Set(s.Header, id)
	}
	if auth != nil && auth.apply != nil {
		if err := auth.apply(req, body); err != nil {
			return nil, &sessionFailure{class: pollwarden.TransportOther, detail: err.Error() + "; nothing sent"}
		}
	}
	r, err := client.Do(req)
	if err != nil {
		class, detail := classify(ctx, err, timeout)
		return nil, &sessionFailure{class: class, detail: "session handshake: " + detail}
	}
	discard(r)
	if r.StatusCode < 200 || r.StatusCode > 299 {
		return nil, &sessionFailure{status: r.StatusCode, retryAfter: r.Header.Get("Retry-After")}
	}
	return r, nil
}

// sessionResponse is the poll's answer when the handshake gave no
// session: its non-2xx status stands for the poll's (401 is the
// credential refused, 429 a rate limit, 5xx a transport failure), and
// anything else is a transport failure. A request did leave.
func sessionResponse(sf *sessionFailure, sc *scrubber, now time.Time) Response {
	r := Response{Sent: true, SentAt: now, ReceivedAt: now, Status: sf.status,
		RetryAfter: cut(sc.text(sf.retryAfter), maxRetryAfter)}
	if sf.status == 0 {
		r.Transport, r.TransportDetail = sf.class, cut(sc.text(sf.detail), maxDetail)
	}
	return r
}
