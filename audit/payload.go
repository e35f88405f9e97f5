package audit

import (
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/recordjson"
)

// sortedPayload writes Payload's canonical bytes directly, field by field
// in the byte order of their JSON names, without the generic decode and
// re-encode (which costs more than the rest of an append) and without
// reflection (which profiles of a daemon's steps still showed). Options
// and ProviderError are absent: events carrying them take the generic
// path. Text is written as the generic path leaves it: no HTML escaping,
// U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD itself (the first
// pass writes the escape, the second decodes it). TestSortedPayload holds
// the two paths equal, and fails when EventData gains a field this
// function lacks.
func sortedPayload(d pollwarden.EventData) ([]byte, bool) {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	if d.Actor != nil {
		b = append(b, `"actor":{"name":`...)
		b = recordjson.AppendCanonicalString(b, d.Actor.Name)
		b = append(b, `,"role":`...)
		b = recordjson.AppendCanonicalString(b, string(d.Actor.Role))
		b = append(b, '}')
	}
	b = payloadInt(b, "bytes", d.Bytes)
	b, ok := payloadTime(b, "deadline_at", d.DeadlineAt)
	if !ok {
		return nil, false
	}
	b = payloadString(b, "decision", d.Decision)
	b = payloadString(b, "delay_source", string(d.DelaySource))
	b = payloadString(b, "detail", d.Detail)
	b = payloadString(b, "elapsed", d.Elapsed)
	b = payloadString(b, "hint", d.Hint)
	b = payloadInt(b, "http_status", int64(d.HTTPStatus))
	b = payloadString(b, "incident", d.Incident)
	b = payloadInt(b, "max_status_requests", int64(d.MaxRequests))
	if b, ok = payloadTime(b, "next_poll_at", d.NextPollAt); !ok {
		return nil, false
	}
	b = payloadString(b, "option", d.Option)
	b = payloadInt(b, "pages", int64(d.Pages))
	b = payloadString(b, "prev_state", d.PrevState)
	b = payloadString(b, "provider_job_id", d.ProviderJobID)
	b = payloadString(b, "provider_request_id", d.RequestID)
	b = payloadString(b, "provider_state", d.ProviderState)
	b = payloadInt(b, "rate_limited_used", int64(d.RateLimited))
	b = payloadString(b, "reason", string(d.Reason))
	b = payloadString(b, "retry_after", d.RetryAfter)
	b = payloadString(b, "sha256", d.SHA256)
	b = payloadString(b, "state", d.State)
	b = payloadInt(b, "status_requests_used", int64(d.RequestsUsed))
	b = payloadString(b, "transport_error", d.Transport)
	b = payloadInt(b, "transport_failures_used", int64(d.FailuresUsed))
	b = payloadString(b, "url", d.URL)
	return append(b, '}'), true
}

// payloadKey appends key as the next member's name.
func payloadKey(b []byte, key string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func payloadString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return recordjson.AppendCanonicalString(payloadKey(b, key), s)
}

func payloadInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(payloadKey(b, key), n, 10)
}

// payloadTime appends a time as time.Time.MarshalJSON does; false when it
// cannot (a year outside 0–9999), for the generic path to fail on.
func payloadTime(b []byte, key string, t *time.Time) ([]byte, bool) {
	if t == nil {
		return b, true
	}
	b = append(payloadKey(b, key), '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, false
	}
	return append(b, '"'), true
}
