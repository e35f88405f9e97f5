package pollwarden

import (
	"encoding/json"
	"time"
)

// Transport failure classes kept with an observation (R12).
const (
	TransportTimeout  = "timeout"
	TransportRefused  = "connection_refused"
	TransportDNS      = "dns"
	TransportTLS      = "tls"
	TransportRedirect = "redirect_refused"
	TransportOther    = "transport_error"
)

// Observation is what one status request produced, already reduced to
// facts: the HTTP result and, separately, what the body said (R1). The
// decision core reads only this; it never sees a secret.
type Observation struct {
	SentAt     time.Time
	ReceivedAt time.Time
	// Status is the HTTP status code, or 0 when no answer arrived.
	Status int
	// Transport is the failure class when no answer arrived ("" otherwise).
	Transport string
	// TransportDetail is a short, secret-free description of the failure.
	TransportDetail string
	// RetryAfter is the raw Retry-After header value, if any (or the
	// contract's rate-limit reset header, written as an HTTP date).
	RetryAfter string
	// RateLimitSignal, when set, says why an answer other than 429 is a
	// rate limit (the contract's rate_limit signals).
	RateLimitSignal string
	RequestID       string
	// ETag is the answer's ETag header (redacted, cut), kept on the record
	// for the next conditional request.
	ETag string
	Body BodyFacts
	// DeniedBody is a 401 or 403 answer's body as text, the secret removed
	// and cut, for the story: what the provider said about the credential.
	DeniedBody string
	// RefusedCredential fingerprints the credential a 401 or 403 refused
	// (nil without a credential, or when it could not be read again).
	RefusedCredential *RefusedCredential
	// Quota is what the answer said of its key's quota (the contract's
	// remaining_header and rate_limit.reset), for policy.KeyNote.
	Quota QuotaFacts
}

// QuotaFacts are an answer's quota headers, read but not yet trusted:
// policy.KeyNote bounds or ignores what is out of range, with a reason.
type QuotaFacts struct {
	// Remaining is the remaining_header's value as sent (redacted, cut);
	// HasRemaining is false when the header was absent.
	Remaining    string
	HasRemaining bool
	// ResetIn is how long after the answer the provider's window resets,
	// from rate_limit.reset; HasReset is false when the header was absent
	// or unreadable, and ResetProblem then says why when it was present.
	ResetIn      time.Duration
	HasReset     bool
	ResetProblem string
}

// BodyFacts is what the contract's paths found in the response body. Hint
// values are kept raw so the core can reject a wrong type (R6).
type BodyFacts struct {
	// Problem is set when the body could not be read as JSON, was larger
	// than the contract allows, or had no usable state; it names the cause.
	Problem string
	// State is the value at state.path; HasState is false when the path
	// gave nothing or a non-string (then Problem says which).
	State    string
	HasState bool
	// FromStatus is set when State came from the contract's mapping of the
	// HTTP status code (state.status_codes), not from the body; the answer
	// is then read as a state whatever its code.
	FromStatus bool
	// ProviderState is what the provider itself said, when it differs from
	// State: the value at state.raw, or the value as sent when
	// state.case_insensitive recorded it in the listed spelling.
	ProviderState string
	// Fields holds the value at each required result path, by path; a path
	// that gave nothing is absent.
	Fields map[string]any
	// Error is the value at result.error_path, as JSON.
	Error json.RawMessage
	// Raw hint values at the contract's hint paths; nil when absent.
	PollAfter    any
	NextCheckAt  any
	JobExpiresAt any
}
