package prober

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// FetchResponse is how one result fetch went, secret-free. Bytes and
// SHA256 cover exactly what was written to the caller's writer.
type FetchResponse struct {
	// Sent is false when nothing left this process.
	Sent   bool
	Status int
	// Bytes and SHA256 describe what was written; complete only when
	// Problem is empty.
	Bytes  int64
	SHA256 string
	// Problem says why the fetch did not hand over a whole result ("" when
	// it did), short and without the secret.
	Problem string
	// TooLarge is set when the result passed the contract's max_bytes.
	TooLarge bool
	// Written is true once any byte reached the writer: a door that
	// streams can no longer answer with an error status.
	Written bool
	// Pages is how many pages a paged fetch handed over (0 otherwise).
	Pages int
	// CredentialError names the reference that failed, never the secret.
	CredentialError error
}

// fetchTimeout bounds a whole result fetch: results are larger than
// status bodies, so ten status timeouts, and at least a minute.
func fetchTimeout(c *pollwarden.ContractSpec) time.Duration {
	t := 10 * c.Status.Timeout
	if t < time.Minute {
		t = time.Minute
	}
	return t
}

// FetchRequest is one result fetch as the controller built it.
type FetchRequest struct {
	Method string
	// Page gives the URL and body (nil for none) of the request for the
	// page after token ("" for the first), its URL checked already.
	Page func(token string) (url string, body []byte, err error)
	// Headers are the contract's headers as this operation sends them.
	Headers map[string]string
}

// Fetch streams the result into w under the status call's credential,
// session, headers and allowed origins (each URL and redirect hop is
// checked as for a status request), bounded by max_bytes. A result that
// is one plain answer is streamed as it arrives, never held whole: a
// declared Content-Length above the bound is refused before a byte is
// written, and a body that passes it stops there, with TooLarge set. A
// fetch whose answers must be read (a paged result, an error_path) reads
// each answer within what is left of the bound, then writes it: one
// answer as it came, or a paged result as JSON Lines, one page a line.
// A body that holds the credential is stopped before it is written.
func (p *Prober) Fetch(ctx context.Context, c *pollwarden.ContractSpec, req FetchRequest, w io.Writer) FetchResponse {
	auth, err := p.authorize(ctx, c)
	var secrets []string
	if auth != nil {
		secrets = auth.secrets
	}
	sc := newScrubber(secrets, c)
	if err != nil {
		msg := cut(sc.text(err.Error()), maxDetail)
		return FetchResponse{CredentialError: errors.New(msg), Problem: msg}
	}
	var r FetchResponse
	switch f := c.ResultFetch; {
	case f == nil || f.MaxBytes <= 0:
		r.Problem = "no max_bytes bound for the result; nothing sent"
	case f.Paged() || f.ErrorPath != "":
		r = p.fetchPages(ctx, c, req, auth, secrets, w)
	default:
		r = p.fetchStream(ctx, c, req, auth, secrets, w)
	}
	auth.answered(r.Status)
	if auth != nil && auth.session != "" && r.Status == http.StatusNotFound {
		// As for a status request: the provider ended the session.
		p.sessions.forget(c, auth.session)
	}
	r.Problem = cut(sc.text(r.Problem), maxDetail)
	return r
}

// fetchStream is a result that is one answer, streamed as it arrives.
func (p *Prober) fetchStream(ctx context.Context, c *pollwarden.ContractSpec, req FetchRequest, auth *authorizer, secrets []string, w io.Writer) FetchResponse {
	max := c.ResultFetch.MaxBytes
	rawURL, body, err := req.Page("")
	if err != nil {
		return FetchResponse{Problem: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout(c))
	defer cancel()
	var resp FetchResponse
	r, problem := p.fetchOne(ctx, c, req, rawURL, body, auth, &resp)
	if problem != "" {
		resp.Problem = problem
		return resp
	}
	defer r.Body.Close()
	if r.ContentLength > max {
		resp.TooLarge = true
		resp.Problem = fmt.Sprintf("the result is %d bytes, more than the contract's max_bytes %d; nothing handed over", r.ContentLength, max)
		return resp
	}
	return stream(ctx, r.Body, w, secrets, max, fetchTimeout(c), resp)
}

// fetchOne sends one request of a result fetch and follows its allowed
// redirects; it returns a 2xx answer whose body the caller reads, or why
// there is none. resp records what was sent and the last status.
func (p *Prober) fetchOne(ctx context.Context, c *pollwarden.ContractSpec, fr FetchRequest, rawURL string, body []byte, auth *authorizer, resp *FetchResponse) (*http.Response, string) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, "the result URL is not an absolute http(s) URL without user info; nothing sent"
	}
	if err := contract.CheckOrigin(c, u.String()); err != nil {
		return nil, err.Error() + "; nothing sent"
	}
	client, err := p.clientFor(c)
	if err != nil {
		return nil, err.Error() + "; nothing sent"
	}
	method := fr.Method
	for hop := 0; ; hop++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil || req.URL.Scheme != u.Scheme || req.URL.Host != u.Host {
			return nil, "cannot build the request; nothing sent"
		}
		req.Header.Set("User-Agent", p.userAgent)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range fr.Headers {
			req.Header.Set(k, v)
		}
		propagateTrace(ctx, c, u.String(), req.Header)
		if auth != nil {
			// Last, so a contract header cannot replace it and a signature
			// covers every header and the body; only ever reached for an
			// allowed origin.
			if err := auth.apply(req, body); err != nil {
				return nil, err.Error() + "; nothing sent"
			}
		}
		resp.Sent = true
		r, err := client.Do(req)
		if err != nil {
			_, detail := classify(ctx, err, fetchTimeout(c))
			return nil, detail
		}
		resp.Status = r.StatusCode
		if next, why, follow := p.redirect(c, u, r, hop); follow || why != "" {
			discard(r)
			if why != "" {
				return nil, why
			}
			if m := redirectMethod(r.StatusCode, method); m != method {
				method, body = m, nil
			}
			u = next
			continue
		}
		if r.StatusCode < 200 || r.StatusCode > 299 {
			discard(r)
			return nil, fmt.Sprintf("the provider answered %d; its body is not the result", r.StatusCode)
		}
		return r, ""
	}
}

// stream copies body to w in chunks, hashing and counting what it writes,
// and stops at the bound or at any of the credential's secrets in any form
// the status path checks. What could still turn out to be the start of a
// secret is held back until a later read decides it, so nothing of a
// secret is written, however the provider splits or escapes it.
func stream(ctx context.Context, body io.Reader, w io.Writer, secrets []string, bound int64, timeout time.Duration, resp FetchResponse) FetchResponse {
	g := newGuard(secrets)
	h := sha256.New()
	buf := make([]byte, 32<<10)
	var held []byte
	var read int64
	// hand writes the held bytes up to decided (a stream offset).
	hand := func(decided int64) bool {
		n := int(decided - resp.Bytes)
		if n <= 0 {
			return true
		}
		if _, err := w.Write(held[:n]); err != nil {
			resp.Problem = "writing the result: " + err.Error()
			return false
		}
		resp.Written = true
		h.Write(held[:n])
		resp.Bytes += int64(n)
		held = append(held[:0], held[n:]...)
		return true
	}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if read+int64(n) > bound {
				resp.TooLarge = true
				resp.Problem = fmt.Sprintf("the result passed the contract's max_bytes %d; stopped, not a whole result", bound)
				break
			}
			read += int64(n)
			held = append(held, buf[:n]...)
			decided := read
			if g != nil {
				var err error
				if decided, err = g.feed(buf[:n], false); err != nil {
					resp.Problem = err.Error()
					break
				}
			}
			if !hand(decided) {
				break
			}
		}
		if errors.Is(rerr, io.EOF) {
			if g != nil {
				if _, err := g.feed(nil, true); err != nil {
					resp.Problem = err.Error()
					break
				}
			}
			hand(read)
			break
		}
		if rerr != nil {
			_, detail := classify(ctx, rerr, timeout)
			resp.Problem = "reading the result: " + detail
			break
		}
	}
	resp.SHA256 = hex.EncodeToString(h.Sum(nil))
	return resp
}

// holdsSecret reports whether b, a whole answer, holds one of the secrets
// in any form the stream guard finds.
func holdsSecret(b []byte, secrets []string) error {
	g := newGuard(secrets)
	if g == nil {
		return nil
	}
	_, err := g.feed(b, true)
	return err
}
