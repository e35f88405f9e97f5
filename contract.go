package pollwarden

import "time"

// Contract is the validated, plain-data form of one provider integration
// (the state table of R2 and everything around it). Package contract parses
// and checks the YAML file; the decision core reads only this.
type Contract struct {
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
	// UnsafeMethod is set when the contract explicitly declares that its
	// status call is not a safe method; then every call needs approval (R16).
	UnsafeMethod bool
}

// Credential says where the secret comes from, never what it is.
type Credential struct {
	Header string
	Scheme string
	// Ref is "env:NAME" or "file:PATH", resolved at request time.
	Ref string
}

// StateTable classifies the provider's state values (R2).
type StateTable struct {
	Path      string
	Pending   []string
	Success   []string
	Failure   []string
	Cancelled []string
	Expired   []string
	// UnlistedPending is true only when the contract says `unlisted:
	// pending`; by default an unlisted value stops as unknown_state.
	UnlistedPending bool
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
	Kind ResultKind
}

// HintPaths locate provider hints in the status body (R6). Empty means the
// provider gives none.
type HintPaths struct {
	PollAfterSeconds string
	NextCheckAt      string
	JobExpiresAt     string
}

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
}

// EscalationSpec bounds what an escalation may offer.
type EscalationSpec struct {
	ExtensionTime     time.Duration
	ExtensionRequests int
	ConsoleURL        string
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

// Action is a provider call other than the status request (cancel).
type Action struct {
	URL    string
	Method string
	// Idempotent is true only when the provider documents that repeating
	// the call is harmless; only then is a second cancel sent (R23).
	Idempotent bool
}

// TerminalStates lists every state the contract treats as an end.
func (c *Contract) TerminalStates() []string {
	var out []string
	for _, s := range [][]string{c.State.Success, c.State.Failure, c.State.Cancelled, c.State.Expired} {
		out = append(out, s...)
	}
	return out
}
