package prober

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// maxProviderError bounds the refusal body a failed submission keeps.
const maxProviderError = 8 << 10

// SubmitAnswer is what one submission send produced, secret-free. Its
// Location is the provider's, not yet resolved nor checked.
type SubmitAnswer struct {
	// Sent is false when nothing left this process (credential, URL).
	Sent            bool
	Status          int
	Transport       string
	TransportDetail string
	RequestID       string
	JobID           string
	Location        string
	// Problem says what the answer lacked (job id, status location).
	Problem       string
	ProviderError json.RawMessage
}

// Submit sends the contract's submission once to submitURL with body and,
// when key is set, the contract's idempotency header. A redirect is not
// followed: a submission is never re-sent anywhere by the transport.
func (p *Prober) Submit(ctx context.Context, c *pollwarden.ContractSpec, submitURL string, body []byte, key string) SubmitAnswer {
	if c.Submit == nil {
		return SubmitAnswer{TransportDetail: "the contract has no submit block"}
	}
	auth, err := p.authorize(ctx, c)
	var secrets []string
	if auth != nil {
		secrets = auth.secrets
	}
	sc := newScrubber(secrets, c)
	if err != nil {
		// Nothing reached the provider (a token endpoint's refusal is not
		// the provider's answer): the submission was not sent.
		return SubmitAnswer{TransportDetail: cut(sc.text(err.Error()), maxDetail)}
	}
	a := p.submitOnce(ctx, c, submitURL, body, key, auth, sc)
	auth.answered(a.Status)
	a.TransportDetail = cut(sc.text(a.TransportDetail), maxDetail)
	a.RequestID = cut(sc.text(a.RequestID), maxRequestIDLen)
	a.JobID = sc.text(a.JobID)
	a.Location = sc.text(a.Location)
	a.Problem = cut(sc.text(a.Problem), maxDetail)
	return a
}

func (p *Prober) submitOnce(ctx context.Context, c *pollwarden.ContractSpec, rawURL string, body []byte, key string, auth *authorizer, sc *scrubber) SubmitAnswer {
	s := c.Submit
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return SubmitAnswer{TransportDetail: "the submit URL is not an absolute http(s) URL without user info"}
	}
	if err := contract.CheckOrigin(c, u.String()); err != nil {
		return SubmitAnswer{TransportDetail: err.Error()}
	}
	timeout := callTimeout(c)
	limit := c.Status.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, s.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return SubmitAnswer{TransportDetail: "cannot build the submission: " + err.Error()}
	}
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	if key != "" && s.IdempotencyKeyHeader != "" {
		req.Header.Set(s.IdempotencyKeyHeader, key)
	}
	propagateTrace(ctx, c, u.String(), req.Header)
	if auth != nil {
		// Last, so a contract header cannot replace it and a signature
		// covers every header.
		if err := auth.apply(req, body); err != nil {
			return SubmitAnswer{TransportDetail: err.Error() + "; nothing sent"}
		}
	}
	client, err := p.clientFor(c)
	if err != nil {
		return SubmitAnswer{Transport: pollwarden.TransportTLS, TransportDetail: err.Error() + "; nothing sent"}
	}
	a := SubmitAnswer{Sent: true}
	r, err := client.Do(req)
	if err != nil {
		a.Transport, a.TransportDetail = classify(ctx, err, timeout)
		return a
	}
	defer r.Body.Close()
	a.Status = r.StatusCode
	a.RequestID = requestID(r.Header, c.Status.RequestIDHeader)
	raw, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		class, detail := classify(ctx, err, timeout)
		a.Transport, a.TransportDetail = class, "reading the answer: "+detail
		return a
	case int64(len(raw)) > limit:
		a.Problem = fmt.Sprintf("the answer is larger than max_body_bytes (%d)", limit)
		return a
	}
	if isEventStream(r.Header.Get("Content-Type")) {
		raw = eventStreamJSON(raw)
	}
	if a.Status >= 200 && a.Status < 300 {
		a.JobID, a.Location, a.Problem = contract.SubmitAnswer(s, r.Header.Get, raw)
	} else if len(raw) > 0 && len(raw) <= maxProviderError {
		a.ProviderError = sc.raw(raw)
		if !json.Valid(a.ProviderError) {
			b, _ := json.Marshal(sc.text(string(raw)))
			a.ProviderError = b
		}
	}
	return a
}
