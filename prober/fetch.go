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
	var secret, value string
	if cred := c.Status.Credential; cred != nil {
		s, err := p.resolve(cred.Ref)
		if err != nil {
			return FetchResponse{CredentialError: err, Problem: err.Error()}
		}
		secret, value = s, s
		if cred.Scheme != "" {
			value = cred.Scheme + " " + s
		}
	}
	r := p.fetch(ctx, c, method, rawURL, value, secret, max, w)
	r.Problem = cut(newScrubber(secret, c).text(r.Problem), maxDetail)
	return r
}

func (p *Prober) fetch(ctx context.Context, c *pollwarden.Contract, method, rawURL, credValue, secret string, max int64, w io.Writer) (resp FetchResponse) {
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
		if cred := c.Status.Credential; cred != nil {
			req.Header.Set(cred.Header, credValue)
		}
		resp.Sent = true
		r, err := p.client.Do(req)
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
		return stream(ctx, r.Body, w, secret, max, timeout, resp)
	}
}

// stream copies body to w in chunks, hashing and counting what it writes,
// and stops at the bound or at the secret.
func stream(ctx context.Context, body io.Reader, w io.Writer, secret string, max int64, timeout time.Duration, resp FetchResponse) FetchResponse {
	h := sha256.New()
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if resp.Bytes+int64(n) > max {
				resp.TooLarge = true
				resp.Problem = fmt.Sprintf("the result passed the contract's max_bytes %d; stopped, not a whole result", max)
				break
			}
			if secret != "" {
				if bytes.Contains(append(tail, chunk...), []byte(secret)) {
					resp.Problem = "the result holds the contract's credential; stopped before it"
					break
				}
				tail = append(tail, chunk...)
				if k := len(secret) - 1; len(tail) > k {
					tail = append(tail[:0], tail[len(tail)-k:]...)
				}
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
