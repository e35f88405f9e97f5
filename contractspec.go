package pollwarden

import (
	"strings"
	"time"
)

// ContractSpec is the validated, plain-data form of one provider integration
// (the state table of R2 and everything around it). Package contract parses
// and checks the YAML file into it and compiles it (contract.Loaded, whose
// Spec it is); the decision core reads only this.
type ContractSpec struct {
	Version int
	Name    string
	Status  StatusCall
	State   StateTable
	Result  ResultSpec
	Hints   HintPaths
	// NotFoundPendingFor is the window after start in which a 404 counts as
	// pending (R14).
	NotFoundPendingFor time.Duration
	Backoff            Backoff
	Limits             Limits
	Escalation         EscalationSpec
	// Cancel is nil when the provider documents no cancel action; then
	// "cancel at provider" is never offered (R19).
	Cancel *Action
	// Submit is nil when pollwarden cannot submit the job itself.
	Submit *SubmitSpec
	// ResultFetch is nil when the provider documents no call that fetches
	// the result (the validated result fields are then the whole result).
	ResultFetch *ResultFetch
	// RateLimit lists the answers other than 429 that mean "rate limited"
	// (GitHub's 403 with x-ratelimit-remaining 0), nil when only 429 does.
	RateLimit *RateLimitSpec
	// Vars declares the variables its URL templates may use besides
	// {job_id}; each operation gives their values (or takes the defaults).
	Vars map[string]VarSpec
	// BaseURL, when set, is the prefix of every URL template written as a
	// path ("/v1/…"); Parse has already resolved those templates under it.
	BaseURL string
	// Callback is nil unless the provider's completion webhook is accepted.
	Callback *CallbackSpec
	// Quota is nil when the contract declares no shared quota; its key
	// (QuotaKey) is still the one its incidents and learned holds use.
	// Omitted when nil so existing contracts keep their fingerprint.
	Quota *QuotaSpec `json:",omitempty"`
}

// RateLimitSpec says how a provider signals a rate limit besides 429 and
// when to ask again.
type RateLimitSpec struct {
	When []RateLimitSignal
	// ResetHeader names a header with the time the limit resets, in
	// ResetUnit (unix_seconds, unix_milliseconds, rfc3339 or seconds from
	// now); it is used when the answer has no Retry-After.
	ResetHeader string
	ResetUnit   HintUnit
	// RetryAfterPath is a JMESPath to a delay in the answer's body
	// (Google's RetryInfo.retryDelay "53s", Kubernetes'
	// details.retryAfterSeconds) in RetryAfterUnit, used when the answer
	// has no Retry-After header.
	RetryAfterPath string
	RetryAfterUnit HintUnit
}

// RateLimitSignal is one answer that means "rate limited": an HTTP status
// with a header, or a body value at Path (AWS's __type), present, or equal
// to Equals when HasEquals is set.
type RateLimitSignal struct {
	Status    int
	Header    string `json:",omitempty"` // omitted when empty, so older contracts keep their fingerprint
	Path      string
	Equals    string
	HasEquals bool
}

// VarSpec is one declared template variable. Pattern is matched against
// the whole value, so a value can only be what the contract expects.
type VarSpec struct {
	Pattern    string
	Default    string
	HasDefault bool
}

// StatusCall describes the one status request.
type StatusCall struct {
	URL     string
	Method  string
	Headers map[string]string
	// Credential is nil when the status call carries none.
	Credential *Credential
	Timeout    time.Duration
	// MaxBodyBytes caps the body read; a larger body is not parsed.
	MaxBodyBytes int64
	AllowedHosts []string
	// RequestIDHeader names the header carrying the provider's request id,
	// in addition to x-request-id and request-id.
	RequestIDHeader string
	// Conditional is "etag" when the contract asks for conditional status
	// requests: If-None-Match with the last ETag, a 304 meaning unchanged.
	Conditional string `json:",omitempty"`
	// PropagateTrace sends the W3C traceparent of the status request's
	// span to the provider (status.propagate_trace); off by default, as a
	// provider need not learn how its caller's traces are laid out.
	PropagateTrace bool `json:",omitempty"`
	// UnsafeMethod is set when the contract explicitly declares that its
	// status call is not a safe method; then every call needs approval (R16).
	UnsafeMethod bool
	// Safe is set when the contract declares a status call with another
	// method (a JSON-RPC tasks/get, an AWS POST) a documented read (R16):
	// then no call needs approval.
	Safe bool
	// Body is the request body template as JSON text, "" for none; its
	// string values may hold {job_id} and the declared variables, filled
	// in as JSON strings (contract.StatusBody).
	Body string
	// CAFile is a file: reference to PEM certificates trusted for this
	// contract's requests alone, instead of the system pool; "" for none.
	CAFile string
	// Session, when set, is a handshake the provider needs before any
	// request (an MCP initialize): its answer's session header is sent
	// on every later request of the contract.
	Session *SessionSpec `json:",omitempty"`
}

// SessionSpec is a provider's session handshake: one request (and an
// optional notification) whose answer carries a session id in a header,
// kept in memory and sent back on every request of the contract until
// the provider answers 404 to it, the documented end of a session.
type SessionSpec struct {
	URL    string
	Method string
	// Body is the handshake's JSON text; Notify, when set, is a second
	// request sent once the session id is known (MCP's
	// notifications/initialized).
	Body   string
	Notify string `json:",omitempty"`
	// Header names the answer's header that holds the session id, sent
	// back under the same name.
	Header string
}

// Credential kinds besides a static header secret (Kind "").
const (
	CredentialOAuth2  = "oauth2_client_credentials"
	CredentialGoogle  = "google_service_account"
	CredentialSigV4   = "aws_sigv4"
	CredentialDefault = ""
)

// Credential says where the secret comes from, never what it is. A kind
// other than the static header mints or signs at request time from the
// references it names; whatever it mints stays in the prober's memory.
type Credential struct {
	// Kind is "" for a static secret, or one of the Credential* kinds.
	Kind   string
	Header string
	Scheme string
	// Ref is "env:NAME" or "file:PATH", resolved at request time: the
	// static secret, the OAuth2 client secret, the Google key file or the
	// AWS secret access key. It is also the credential's name.
	Ref string
	// TokenURL is the OAuth2 token endpoint, written in the contract.
	TokenURL string
	// ClientID is an env:/file: reference to the OAuth2 client id.
	ClientID string
	Scopes   []string
	// Region and Service scope an AWS SigV4 signature.
	Region, Service string
	// AccessKeyID and SessionToken are env:/file: references; the
	// session token is optional.
	AccessKeyID, SessionToken string
	// ApproveEachCall marks a credential whose status API is privileged
	// (it reveals sensitive job metadata): every status call under it,
	// even a GET, waits for an approver's approval of that one call.
	ApproveEachCall bool `json:",omitempty"`
}

// EachCallNeedsApproval reports whether every status request of s waits
// for an approver's approval of that one call: an undeclared unsafe method
// (R16), or a credential the contract marks approve_each_call.
func (s StatusCall) EachCallNeedsApproval() bool {
	return s.UnsafeMethod || s.Credential != nil && s.Credential.ApproveEachCall
}

// StateTable classifies the provider's state values (R2).
type StateTable struct {
	Path string
	// Header, set instead of Path, names the response header whose value
	// is the state (Azure Blob's x-ms-copy-status on a HEAD): some
	// providers answer a job's state in a header and no body at all.
	Header    string
	Pending   []string
	Success   []string
	Failure   []string
	Cancelled []string
	Expired   []string
	// UnlistedPending is true only when the contract says `unlisted:
	// pending`; by default an unlisted value stops as unknown_state.
	UnlistedPending bool
	// CaseInsensitive makes "running" match a listed "Running" (Azure
	// services answer either); the state is then recorded as listed.
	CaseInsensitive bool
	// StatusCodes maps an HTTP status to a state value of the lists, for
	// providers whose answer code is the state: an ARM Location monitor
	// answers 202 with no body while running, a deletion wait ends on 404.
	// A mapped answer's body is not needed for the state.
	StatusCodes map[int]string
	// RawPath, when set, is a JMESPath to what the provider itself said
	// (processing_status, the conditions' types), recorded next to a state
	// that the state path combined from several fields.
	RawPath string
}

// ResultKind is what a required result field must hold.
type ResultKind string

// The result kinds.
const (
	KindURL     ResultKind = "url"
	KindString  ResultKind = "string"
	KindNumber  ResultKind = "number"
	KindBool    ResultKind = "bool"
	KindPresent ResultKind = "present"
)

// ResultSpec lists what a success must carry (R3).
type ResultSpec struct {
	Require   []Field
	ErrorPath string
}

// Field is one required result field.
type Field struct {
	Path string
	// Header, set instead of Path, names the response header that holds
	// the field; its value is kept under Key.
	Header string `json:",omitempty"`
	Kind   ResultKind
}

// Key is where the field sits among the result fields: its path, or the
// header's name in lower case (header names are case-insensitive, so one
// spelling is kept).
func (f Field) Key() string {
	if f.Header != "" {
		return strings.ToLower(f.Header)
	}
	return f.Path
}

// HintPaths locate provider hints in the status body (R6). Empty means the
// provider gives none.
type HintPaths struct {
	PollAfterSeconds string
	NextCheckAt      string
	JobExpiresAt     string
	// The units the provider writes each hint in; empty means the
	// default: seconds for PollAfterSeconds, RFC 3339 for the times.
	PollAfterUnit    HintUnit
	NextCheckAtUnit  HintUnit
	JobExpiresAtUnit HintUnit
	// JobExpiresAfter, when set, makes the expiry relative: the time at
	// JobExpiresAt plus the delay at this path (MCP's createdAt + ttl), in
	// JobExpiresAfterUnit; a null delay means the job never expires.
	JobExpiresAfter     string   `json:",omitempty"`
	JobExpiresAfterUnit HintUnit `json:",omitempty"`
}

// HintUnit is how a provider writes a delay or a time.
type HintUnit string

// The hint units: a delay in seconds or milliseconds or as a duration
// string ("3s", "1.5m"); a time as RFC 3339 or unix seconds or milliseconds.
const (
	UnitSeconds          HintUnit = "seconds"
	UnitMilliseconds     HintUnit = "milliseconds"
	UnitDuration         HintUnit = "duration"
	UnitRFC3339          HintUnit = "rfc3339"
	UnitUnixSeconds      HintUnit = "unix_seconds"
	UnitUnixMilliseconds HintUnit = "unix_milliseconds"
)

// Backoff is the local schedule of R5.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Limits are the contract's defaults; an operation may lower them and only
// an approver may raise them (R10, R20).
type Limits struct {
	Deadline             time.Duration
	MaxStatusRequests    int
	MaxTransportFailures int
	MaxRateLimited       int
	// MaxRequestsPerSecond caps the status requests one process sends to
	// this provider across all its operations (the daemon's scheduler
	// enforces it); 0 means no ceiling. It is per process: a fleet of N
	// replicas divides the provider's allowance by N.
	MaxRequestsPerSecond float64
	// ConsecutiveTransportFailures, set by limits.transport_failures:
	// consecutive, makes an answer whose state was read reset the count of
	// transport failures, so scattered blips over a long job never add up
	// to an escalation. The default (total) counts every failure of the
	// operation. Omitted when false so existing contract digests hold.
	ConsecutiveTransportFailures bool `json:",omitempty"`
}

// EscalationSpec bounds what an escalation may offer.
type EscalationSpec struct {
	ExtensionTime     time.Duration
	ExtensionRequests int
	// ExtensionMaxTime and ExtensionMaxRequests bound what the extend
	// option may offer when an agent asked for more (request_extension);
	// 0 means the default, DefaultAskFactor times the fixed amount.
	// Omitted when unset so existing contract fingerprints hold.
	ExtensionMaxTime     time.Duration `json:",omitempty"`
	ExtensionMaxRequests int           `json:",omitempty"`
	ConsoleURL           string
	// RemindAfter, when set, reminds the notified people of an escalation
	// nobody has decided, once each period (a bounded number of times).
	RemindAfter time.Duration
	// ExpireAfter, when set, ends the wait for a decision: the request is
	// recorded as expired and OnExpiry is applied.
	ExpireAfter time.Duration
	// OnExpiry is the option applied at expiry: abandon (the default) or
	// cancel_at_provider.
	OnExpiry string
}

// DefaultAskFactor is how many times the contract's fixed extension an
// agent's asked extension may be offered as, when the contract sets no
// escalation.extension.max_time / max_status_requests: an agent that needs
// 30m where the contract grants 15m is offered what it asked, and a person
// still decides.
const DefaultAskFactor = 4

// ExtensionBounds is the most one extend option may grant when an agent
// asked for it: the contract's max_time and max_status_requests, or
// DefaultAskFactor times the fixed amounts (never past MaxSpan and
// MaxCount).
func (e EscalationSpec) ExtensionBounds() (time.Duration, int) {
	t, n := e.ExtensionMaxTime, e.ExtensionMaxRequests
	if t <= 0 {
		t = min(e.ExtensionTime*DefaultAskFactor, MaxSpan)
	}
	if n <= 0 {
		n = min(e.ExtensionRequests*DefaultAskFactor, MaxCount)
	}
	return t, n
}

// Action is a provider call other than the status request (cancel).
type Action struct {
	URL    string
	Method string
	// Body is the request body template as JSON text ("" for none), over
	// {job_id} and the variables (a JSON-RPC tasks/cancel).
	Body string `json:",omitempty"`
	// Idempotent is true only when the provider documents that repeating
	// the call is harmless; only then is a second cancel sent (R23).
	Idempotent bool
}

// TerminalStates lists every state the contract treats as an end.
func (c *ContractSpec) TerminalStates() []string {
	var out []string
	for _, s := range [][]string{c.State.Success, c.State.Failure, c.State.Cancelled, c.State.Expired} {
		out = append(out, s...)
	}
	return out
}

// Contract is the former name of ContractSpec, kept so that an embedder's
// code still builds.
//
// Deprecated: use ContractSpec.
type Contract = ContractSpec
