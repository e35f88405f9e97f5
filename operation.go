package pollwarden

import (
	"encoding/json"
	"maps"
	"time"
)

// Phase is where an operation stands. Only PhaseWaiting and
// PhaseCancelling permit another status request (Polling); an escalated
// operation awaits a person's decision (AwaitsDecision), which may reopen
// it; succeeded, failed, cancelled and expired are ends (Finished).
type Phase string

// The phases, also used as the "outcome" of a finished operation.
const (
	PhaseWaiting   Phase = "waiting"
	PhaseSucceeded Phase = "succeeded"
	PhaseFailed    Phase = "failed"
	PhaseCancelled Phase = "cancelled"
	PhaseExpired   Phase = "expired"
	PhaseEscalated Phase = "escalated"
	// PhaseCancelling: a cancel at the provider was recorded (and perhaps
	// sent); the operation keeps observing, within its budgets and
	// deadline, until the provider reports an end state (R23).
	PhaseCancelling Phase = "cancelling"
)

// Polling reports whether the operation is still observed: another
// status request may be sent, within its budgets and deadline. A
// cancelling operation is (R23); every other phase sends nothing without a
// new decision (R17).
func (p Phase) Polling() bool { return p == PhaseWaiting || p == PhaseCancelling }

// AwaitsDecision reports whether a person must decide before anything
// more happens: the operation escalated, and an approver's decision may
// reopen it (R20).
func (p Phase) AwaitsDecision() bool { return p == PhaseEscalated }

// Finished reports whether no phase change can ever follow: the job
// succeeded, failed, was cancelled or expired. An escalated operation is
// not finished; a decision may still reopen it.
func (p Phase) Finished() bool {
	switch p {
	case PhaseSucceeded, PhaseFailed, PhaseCancelled, PhaseExpired:
		return true
	}
	return false
}

// Known reports whether p is one of the phases above, so a door can refuse
// a filter that names none.
func (p Phase) Known() bool {
	return p.Polling() || p.AwaitsDecision() || p.Finished() || p.Submitting()
}

// Phases lists every phase, in the order of an operation's life.
func Phases() []Phase {
	return []Phase{PhaseSubmitting, PhaseWaiting, PhaseCancelling, PhaseSucceeded, PhaseFailed, PhaseCancelled, PhaseExpired, PhaseEscalated}
}

// Reason is the machine-readable cause of an escalation (R17).
type Reason string

// The escalation reasons, fixed by the specification.
const (
	ReasonDeadlineExceeded       Reason = "deadline_exceeded"
	ReasonRequestBudgetExhausted Reason = "request_budget_exhausted"
	ReasonRateLimited            Reason = "rate_limited"
	ReasonUnknownState           Reason = "unknown_state"
	ReasonAuthorizationDenied    Reason = "authorization_denied"
	ReasonProviderFailure        Reason = "provider_failure"
	ReasonIntegrationFailure     Reason = "integration_failure"
)

// DelaySource names who chose the time of the next status request (R24).
type DelaySource string

// The delay sources.
const (
	DelayRetryAfter      DelaySource = "provider_retry_after"
	DelayPollHint        DelaySource = "provider_poll_hint"
	DelayLocalBackoff    DelaySource = "local_backoff"
	DelayManualExtension DelaySource = "manual_extension"
	// DelayCallback: a provider callback said the job ended, so the next
	// request goes as soon as the limits allow (policy.Callback).
	DelayCallback DelaySource = "provider_callback"
	// DelaySharedQuota: the request was held back by the shared quota of
	// its key (KeyState), which every operation, process and replica on
	// the store takes from; the wait spends no budget.
	DelaySharedQuota DelaySource = "shared_quota"
	// DelayProviderIncident: the request was held back because an incident
	// is open for its key (one probe at a time while the provider fails).
	DelayProviderIncident DelaySource = "provider_incident"
)

// Operation is the durable record of one wait (R4, R10). Everything needed
// to resume without polling the wrong job is kept together here; the
// credential appears only by name, never as a secret (R27).
type Operation struct {
	ID            string `json:"operation_id"`
	Contract      string `json:"contract"`
	ProviderJobID string `json:"provider_job_id"`
	StatusURL     string `json:"status_url"`
	// CredentialName is the reference from the contract (for example
	// "env:EXPORT_API_TOKEN"): the account context, not the secret.
	CredentialName string `json:"credential_name,omitempty"`
	// Fingerprint identifies the original request (contract, status call,
	// job, credential name) so a resume can refuse a different one.
	Fingerprint string `json:"request_fingerprint"`
	// RequestDigest, when a door sets it, digests the whole create request
	// as the caller sent it (limits and deadline included), so that a retry
	// with the same operation id can be told from a different request.
	RequestDigest string `json:"request_digest,omitempty"`
	// Owner is who created the operation: the name of the API or MCP token
	// (never the token), or a local process such as "cli:alice". Agent
	// tokens see and act on only the operations they own (unless their
	// entry says scope: all); empty on records made before owners were
	// kept, which only approvers, admins and scope-all agents see.
	Owner string `json:"owner,omitempty"`
	// Priority orders the operations that wait for one shared quota: 1 is
	// the most urgent, 9 the least; 0 means the default, 5 (see
	// EffectivePriority). It decides only when the quota is what limits.
	Priority int `json:"priority,omitempty"`
	// Vars are the values of the contract's declared template variables
	// for this job (defaults filled in), so the record alone says which job
	// it is; they are part of the fingerprint.
	Vars map[string]string `json:"vars,omitempty"`
	// ExpectedTerminal lists the contract's terminal states at creation.
	ExpectedTerminal []string `json:"expected_terminal_states"`

	StartedAt  time.Time `json:"started_at"`
	DeadlineAt time.Time `json:"deadline_at"`
	// BusinessDeadlineAt is the workflow's own deadline when the caller gave
	// one distinct from DeadlineAt; ProviderExpiresAt is the job's expiry as
	// reported by the provider (R10).
	BusinessDeadlineAt *time.Time `json:"business_deadline_at,omitempty"`
	ProviderExpiresAt  *time.Time `json:"provider_expires_at,omitempty"`

	MaxStatusRequests     int `json:"max_status_requests"`
	MaxTransportFailures  int `json:"max_transport_failures"`
	MaxRateLimited        int `json:"max_rate_limited"`
	StatusRequestsUsed    int `json:"status_requests_used"`
	TransportFailuresUsed int `json:"transport_failures_used"`
	RateLimitedUsed       int `json:"rate_limited_used"`
	// CompletedPolls counts status requests whose outcome was recorded; it
	// is the backoff attempt number of R5.
	CompletedPolls int `json:"completed_polls"`
	// ApprovedCalls counts status calls an approver allowed one by one for a
	// contract whose status method is not safe (R16).
	ApprovedCalls int `json:"approved_calls,omitempty"`
	// ResultFetchesSent counts the result fetches sent to the provider,
	// through every door and process, counted before each is sent (like
	// StatusRequestsUsed) and bounded by result.fetch.max_fetches.
	ResultFetchesSent int `json:"result_fetches_sent,omitempty"`

	NextPollAt     time.Time   `json:"next_poll_at"`
	NextPollSource DelaySource `json:"next_poll_source"`
	// NextPollSpread is true when NextPollAt was set by spreading a late
	// wake-up (R9, policy.Gate): the wake-up at that time sends its one
	// request and is not spread a second time, however late it is.
	NextPollSpread bool `json:"next_poll_spread,omitempty"`
	// HeldBy is the provider incident that holds the operation while its
	// next look is due with the delay source provider_incident: an
	// approver's decision on that incident applies to it.
	HeldBy string `json:"held_by,omitempty"`
	// JitterFactor is R5's jitter, drawn once per operation (log-uniformly) in
	// [0.5, 1] when the operation is created and kept here so a restart
	// does not redraw it. A record written before it existed has 0: its
	// next decision draws one and saves it (policy.Decide).
	JitterFactor float64 `json:"jitter_factor,omitempty"`

	Phase     Phase  `json:"phase"`
	Reason    Reason `json:"reason,omitempty"`
	LastState string `json:"last_state,omitempty"`
	// LastProviderState is the provider's own value behind LastState when
	// the two differ (a state built from several fields, or another case).
	LastProviderState string `json:"last_provider_state,omitempty"`
	// LastETag is the ETag of the last answer whose state was read, sent
	// back as If-None-Match under status.conditional: etag. Redacted and
	// cut like every kept header.
	LastETag      string          `json:"last_etag,omitempty"`
	LastHTTP      int             `json:"last_http_status,omitempty"`
	LastHTTPAt    *time.Time      `json:"last_http_at,omitempty"`
	LastRequestID string          `json:"last_request_id,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	ProviderError json.RawMessage `json:"provider_error,omitempty"`
	FinishedAt    *time.Time      `json:"finished_at,omitempty"`
	Escalation    *Escalation     `json:"escalation,omitempty"`
	// Escalations counts the escalations made so far; the next one's id
	// is "esc-" followed by it plus one.
	Escalations int `json:"escalations,omitempty"`
	// LastDecision is the latest answer to one of its escalations.
	LastDecision *DecisionRecord `json:"last_decision,omitempty"`
	// RefusedCredential fingerprints the credential of the last 401/403
	// (authorization_denied); nil when none was refused.
	RefusedCredential *RefusedCredential `json:"refused_credential,omitempty"`
	// Cancel is the record of a cancel at the provider, from the moment it
	// is asked for (before anything is sent); nil when none was asked.
	Cancel *CancelRecord `json:"cancel,omitempty"`
	// Submission is the record of the job's submission when pollwarden
	// submitted it (controller.SubmitJob); nil when the caller did.
	Submission *Submission `json:"submission,omitempty"`
	// ContractDigest digests each section of the contract the operation
	// was created under (policy.ContractDigest), so that a decision made
	// with a different contract of the same name is refused and told what
	// differs. Nil for a record created before it was kept.
	ContractDigest map[string]string `json:"contract_digest,omitempty"`
	// ContractLimits are the limits of the contract the operation was
	// created under, so that a later file of the same name can be told to
	// have lowered or raised them, value by value. Nil for a record
	// created before they were kept.
	ContractLimits *ContractLimits `json:"contract_limits,omitempty"`
	// ContractFingerprint names the contract the operation runs under, as
	// the store keeps it (StoredContract): every door acting on the
	// operation uses that one, whatever file of its name is loaded. Empty
	// for a record created before contracts were kept.
	ContractFingerprint string `json:"contract_fingerprint,omitempty"`

	// Version increases with every saved change; a save names the version
	// it read so that a concurrent change is detected, never overwritten.
	Version int64 `json:"version"`
}

// Clone returns a deep copy, so a decision can build the next record
// without touching the one it was given.
func (o *Operation) Clone() *Operation {
	// The copy and its optional times and limits share one allocation:
	// Decide clones a record for every answer, and this keeps a clone to a
	// few allocations however many of those fields are set.
	b := &cloneBlock{op: *o}
	c := &b.op
	c.ExpectedTerminal = append([]string(nil), o.ExpectedTerminal...)
	c.Vars = maps.Clone(o.Vars)
	c.Result = append(json.RawMessage(nil), o.Result...)
	c.ProviderError = append(json.RawMessage(nil), o.ProviderError...)
	c.BusinessDeadlineAt = b.time(0, o.BusinessDeadlineAt)
	c.ProviderExpiresAt = b.time(1, o.ProviderExpiresAt)
	c.LastHTTPAt = b.time(2, o.LastHTTPAt)
	c.FinishedAt = b.time(3, o.FinishedAt)
	if o.Escalation != nil {
		e := *o.Escalation
		e.Options = append([]Option(nil), o.Escalation.Options...)
		if o.Escalation.Decided != nil {
			d := *o.Escalation.Decided
			e.Decided = &d
		}
		c.Escalation = &e
	}
	if o.Cancel != nil {
		k := *o.Cancel
		k.AnsweredAt = cloneTime(o.Cancel.AnsweredAt)
		c.Cancel = &k
	}
	c.Submission = o.Submission.Clone()
	if o.LastDecision != nil {
		d := *o.LastDecision
		c.LastDecision = &d
	}
	if o.RefusedCredential != nil {
		r := *o.RefusedCredential
		c.RefusedCredential = &r
	}
	if o.ContractLimits != nil {
		b.limits = *o.ContractLimits
		c.ContractLimits = &b.limits
	}
	c.ContractDigest = maps.Clone(o.ContractDigest)
	return c
}

// cloneBlock is one Clone's allocation: the copied record and the values
// its pointer fields point to.
type cloneBlock struct {
	op     Operation
	times  [4]time.Time
	limits ContractLimits
}

// time copies *t into the block's i-th time, or is nil for a nil t.
func (b *cloneBlock) time(i int, t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	b.times[i] = *t
	return &b.times[i]
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}

// ContractLimits is the part of a contract's limits an operation keeps
// with its record (Operation.ContractLimits).
type ContractLimits struct {
	Deadline             time.Duration `json:"deadline_ns"`
	MaxStatusRequests    int           `json:"max_status_requests"`
	MaxTransportFailures int           `json:"max_transport_failures"`
	MaxRateLimited       int           `json:"max_rate_limited"`
}
