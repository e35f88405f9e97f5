package prober

import (
	"net/http"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Replay builds the Response a status call would have returned for a
// saved answer (code, headers, body), so `contract test` judges it by the
// same code as a live answer: the same headers are kept, cut the same way,
// and nothing is sent.
func Replay(c *pollwarden.ContractSpec, status int, h http.Header, body []byte, at time.Time) Response {
	resp := Response{Sent: true, SentAt: at, ReceivedAt: at, Status: status}
	resp.RetryAfter = cut(h.Get("Retry-After"), maxRetryAfter)
	resp.RequestID = cut(requestID(h, c.Status.RequestIDHeader), maxRequestIDLen)
	resp.Location = cut(h.Get("Location"), maxLocation)
	resp.ETag = cut(h.Get("ETag"), maxRequestIDLen)
	resp.Headers = contractHeaders(c, h)
	for k, v := range resp.Headers {
		resp.Headers[k] = cut(v, maxRequestIDLen)
	}
	limit := c.Status.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	if int64(len(body)) > limit {
		resp.BodyTooLarge = true
		return resp
	}
	resp.body = &answerBody{raw: body}
	return resp
}
