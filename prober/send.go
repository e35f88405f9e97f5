package prober

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// send performs the request and its redirects. auth puts the credential
// on each hop (nil when the contract has none); hdr are the contract's
// headers as this operation sends them. The
// Response's texts are whole and unredacted, and its body has no scrubber
// yet: call redacts, then cuts.
func (p *Prober) send(ctx context.Context, c *pollwarden.ContractSpec, method, rawURL string, auth *authorizer, reqBody []byte, hdr map[string]string) (resp Response) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Response{Transport: pollwarden.TransportOther, TransportDetail: "status url is not an absolute http(s) url"}
	}
	if u.User != nil {
		return Response{Transport: pollwarden.TransportOther, TransportDetail: "url carries user info; use a credential reference"}
	}
	if err := contract.CheckOrigin(c, u.String()); err != nil {
		return Response{Transport: pollwarden.TransportRedirect, TransportDetail: err.Error() + "; nothing sent"}
	}

	timeout := callTimeout(c)
	limit := c.Status.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	client, err := p.clientFor(c)
	if err != nil {
		return Response{Transport: pollwarden.TransportTLS, TransportDetail: err.Error() + "; nothing sent"}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	for hop := 0; ; hop++ {
		var rd io.Reader
		if reqBody != nil {
			rd = bytes.NewReader(reqBody)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			resp.Transport, resp.TransportDetail = pollwarden.TransportOther, "cannot build request: "+err.Error()
			return resp
		}
		if req.URL.Scheme != u.Scheme || req.URL.Host != u.Host {
			// The URL read back differently from the one checked; send nothing.
			resp.Transport, resp.TransportDetail = pollwarden.TransportOther, "url does not read back the same; nothing sent"
			return resp
		}
		req.Header.Set("User-Agent", p.userAgent)
		if reqBody != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		propagateTrace(ctx, c, u.String(), req.Header)
		if tag := ifNoneMatch(ctx); tag != "" && c.Status.Conditional == "etag" {
			req.Header.Set("If-None-Match", tag)
		}
		if auth != nil {
			// Last, so a contract header of the same name cannot replace
			// it and a signature covers every header; only ever reached
			// for an allowed origin.
			if err := auth.apply(req, reqBody); err != nil {
				resp.Transport, resp.TransportDetail = pollwarden.TransportOther, err.Error()+"; nothing sent"
				return resp
			}
		}
		if !resp.Sent {
			resp.Sent, resp.SentAt = true, p.now()
		}
		r, err := client.Do(req)
		if err != nil {
			resp.ReceivedAt = p.now()
			resp.Transport, resp.TransportDetail = classify(ctx, err, timeout)
			return resp
		}
		resp.Status = r.StatusCode
		resp.RetryAfter = r.Header.Get("Retry-After")
		resp.RequestID = requestID(r.Header, c.Status.RequestIDHeader)
		resp.Location = r.Header.Get("Location")
		resp.ETag = r.Header.Get("ETag")
		resp.Headers = contractHeaders(c, r.Header)

		if next, why, follow := p.redirect(c, u, r, hop); follow || why != "" {
			discard(r)
			if why != "" {
				resp.ReceivedAt = p.now()
				resp.Transport, resp.TransportDetail = pollwarden.TransportRedirect, why
				return resp
			}
			if m := redirectMethod(r.StatusCode, method); m != method {
				method, reqBody = m, nil // a 301/302/303 turns it into a GET without a body
			}
			u = next
			continue
		}

		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		r.Body.Close()
		resp.ReceivedAt = p.now()
		switch {
		case err != nil:
			class, detail := classify(ctx, err, timeout)
			resp.Transport, resp.TransportDetail = class, "reading body: "+detail
		case int64(len(body)) > limit:
			resp.BodyTooLarge = true
		default:
			if isEventStream(r.Header.Get("Content-Type")) {
				body = eventStreamJSON(body)
			}
			resp.body = &answerBody{raw: body}
		}
		return resp
	}
}

// redirect decides what to do with a 3xx. It returns the next URL and
// follow=true to go on, a non-empty why to refuse, or neither when the
// answer is not a redirect to follow (no Location, or 300/304). Every hop
// passes the same origin check as the first URL: the provider cannot send
// the credential to another port or scheme, nor to plain http.
func (p *Prober) redirect(c *pollwarden.ContractSpec, cur *url.URL, r *http.Response, hop int) (next *url.URL, why string, follow bool) {
	switch r.StatusCode {
	case 301, 302, 303, 307, 308:
	default:
		return nil, "", false
	}
	loc := r.Header.Get("Location")
	if loc == "" {
		return nil, "", false
	}
	next, err := cur.Parse(loc)
	switch {
	case err != nil:
		return nil, "redirect refused: unparseable Location", false
	case hop >= MaxRedirects:
		return nil, fmt.Sprintf("redirect refused: more than %d redirects", MaxRedirects), false
	case next.Scheme != "http" && next.Scheme != "https":
		return nil, "redirect refused: scheme " + next.Scheme + " is not http(s)", false
	case cur.Scheme == "https" && next.Scheme == "http":
		return nil, "redirect refused: downgrade from https to http", false
	case next.User != nil:
		return nil, "redirect refused: Location carries user info", false
	}
	if err := contract.CheckOrigin(c, next.String()); err != nil {
		return nil, "redirect refused: " + err.Error(), false
	}
	return next, "", true
}

// redirectMethod mirrors net/http: 301/302/303 turn a non-GET/HEAD into GET,
// 307/308 keep the method.
func redirectMethod(code int, method string) string {
	if code == 307 || code == 308 || method == http.MethodGet || method == http.MethodHead {
		return method
	}
	return http.MethodGet
}

// discard drains a little of a body we will not use so the connection can be
// reused, then closes it.
func discard(r *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	r.Body.Close()
}

// requestID returns the first non-empty provider request id header,
// whole: call cuts it after redaction.
func requestID(h http.Header, contractHeader string) string {
	names := []string{"X-Request-Id", "Request-Id", "X-Amzn-Requestid", "X-Ms-Request-Id"}
	if contractHeader != "" {
		names = append([]string{contractHeader}, names...)
	}
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// contractHeaders copies the headers the contract reads (its state
// header, header fields and rate_limit headers), and no others: the rest
// of a provider's headers never leave the prober. A header sent on
// several lines gives its first value, as http.Header.Get reads it.
func contractHeaders(c *pollwarden.ContractSpec, h http.Header) map[string]string {
	var out map[string]string
	for _, n := range contract.ResponseHeaders(c) {
		if v := h.Get(n); v != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[n] = v
		}
	}
	return out
}
