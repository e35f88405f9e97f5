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
	// CredentialError names the reference that failed, never the secret.
	CredentialError error
}

// fetchTimeout bounds a whole result fetch: results are larger than
// status bodies, so ten status timeouts, and at least a minute.
func fetchTimeout(c *pollwarden.Contract) time.Duration {
	t := 10 * c.Status.Timeout
	if t < time.Minute {
		t = time.Minute
	}
	return t
}

// Fetch streams the result at rawURL into w under the status call's
// credential, headers and allowed origins (each redirect hop is checked
// as for a status request), never holding the whole result in memory.
// A declared Content-Length above max is refused before a byte is
// written; a body that passes max as it streams stops there, with
// TooLarge set. A body that holds the credential is stopped before the
// chunk that completes it is written (only its raw form is looked for
// while streaming).
func (p *Prober) Fetch(ctx context.Context, c *pollwarden.Contract, method, rawURL string, max int64, w io.Writer) FetchResponse {
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
	r := p.fetch(ctx, c, method, rawURL, auth, secrets, max, w)
	r.Problem = cut(sc.text(r.Problem), maxDetail)
	return r
}

func (p *Prober) fetch(ctx context.Context, c *pollwarden.Contract, method, rawURL string, auth *authorizer, secrets []string, max int64, w io.Writer) (resp FetchResponse) {
	if max <= 0 {
		return FetchResponse{Problem: "no max_bytes bound for the result"}
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return FetchResponse{Problem: "the result URL is not an absolute http(s) URL without user info; nothing sent"}
	}
	if err := contract.CheckOrigin(c, u.String()); err != nil {
		return FetchResponse{Problem: err.Error() + "; nothing sent"}
	}
	client, err := p.clientFor(c)
	if err != nil {
		return FetchResponse{Problem: err.Error() + "; nothing sent"}
	}
	timeout := fetchTimeout(c)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil || req.URL.Scheme != u.Scheme || req.URL.Host != u.Host {
			resp.Problem = "cannot build the request; nothing sent"
			return resp
		}
		req.Header.Set("User-Agent", p.userAgent)
		for k, v := range c.Status.Headers {
			req.Header.Set(k, v)
		}
		propagateTrace(ctx, c, u.String(), req.Header)
		if auth != nil {
			// Last, so a contract header cannot replace it and a signature
			// covers every header; only ever reached for an allowed origin.
			if err := auth.apply(req, nil); err != nil {
				resp.Problem = err.Error() + "; nothing sent"
				return resp
			}
		}
		resp.Sent = true
		r, err := client.Do(req)
		if err != nil {
			_, detail := classify(ctx, err, timeout)
			resp.Problem = detail
			return resp
		}
		resp.Status = r.StatusCode
		if next, why, follow := p.redirect(c, u, r, hop); follow || why != "" {
			discard(r)
			if why != "" {
				resp.Problem = why
				return resp
			}
			u = next
			continue
		}
		defer r.Body.Close()
		if r.StatusCode < 200 || r.StatusCode > 299 {
			discard(r)
			resp.Problem = fmt.Sprintf("the provider answered %d; its body is not the result", r.StatusCode)
			return resp
		}
		if r.ContentLength > max {
			resp.TooLarge = true
			resp.Problem = fmt.Sprintf("the result is %d bytes, more than the contract's max_bytes %d; nothing handed over", r.ContentLength, max)
			return resp
		}
		return stream(ctx, r.Body, w, secrets, max, timeout, resp)
	}
}

// stream copies body to w in chunks, hashing and counting what it writes,
// and stops at the bound or at any of the credential's secrets.
func stream(ctx context.Context, body io.Reader, w io.Writer, secrets []string, bound int64, timeout time.Duration, resp FetchResponse) FetchResponse {
	keep := 0
	for _, s := range secrets {
		keep = max(keep, len(s)-1)
	}
	h := sha256.New()
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if resp.Bytes+int64(n) > bound {
				resp.TooLarge = true
				resp.Problem = fmt.Sprintf("the result passed the contract's max_bytes %d; stopped, not a whole result", bound)
				break
			}
			if keep > 0 {
				seen := append(tail, chunk...)
				if holdsAny(seen, secrets) {
					resp.Problem = "the result holds the contract's credential; stopped before it"
					break
				}
				tail = append(tail[:0], seen[max(0, len(seen)-keep):]...)
			}
			if _, err := w.Write(chunk); err != nil {
				resp.Problem = "writing the result: " + err.Error()
				break
			}
			resp.Written = true
			h.Write(chunk)
			resp.Bytes += int64(n)
		}
		if errors.Is(rerr, io.EOF) {
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

// holdsAny reports whether b holds one of the (non-empty) secrets.
func holdsAny(b []byte, secrets []string) bool {
	for _, s := range secrets {
		if s != "" && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}
