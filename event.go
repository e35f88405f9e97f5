package pollwarden

import (
	"encoding/json"
	"time"
)

// EventKind names what an audit event records (R24).
type EventKind string

// The event kinds.
const (
	EventSubmitted EventKind = "submitted"
	EventResumed   EventKind = "resumed"
	// EventInterrupted records that the process waiting in the foreground
	// was stopped (Ctrl-C, SIGTERM) and nothing polls the operation until
	// it is resumed.
	EventInterrupted        EventKind = "interrupted"
	EventNextCheckScheduled EventKind = "next_check_scheduled"
	EventRequestSent        EventKind = "status_request_sent"
	EventResponseReceived   EventKind = "response_received"
	EventHintRejected       EventKind = "hint_rejected"
	EventStateChanged       EventKind = "state_changed"
	EventSucceeded          EventKind = "succeeded"
	EventFinished           EventKind = "finished"
	EventEscalated          EventKind = "escalated"
	EventExtensionRequested EventKind = "extension_requested"
	EventDecision           EventKind = "decision"
	EventAction             EventKind = "action"
	// EventDecisionReminder records that a person was reminded of an
	// escalation still awaiting a decision (escalation.remind_after).
	EventDecisionReminder EventKind = "decision_reminder"
	// EventDecisionExpired records that nobody decided within
	// escalation.expire_after; the contract's default is then applied as
	// a decision of its own, so an expiry never passes for a person's answer.
	EventDecisionExpired EventKind = "decision_expired"
)

// Event is one entry of the audit trail. Events are appended in the same
// transaction as the record change they explain. The store keeps ONE chain
// across all operations (R25): every event gets the next global position
// Pos and carries the hash of the event at Pos-1, so the store's history is
// a single sequence that any edit, deletion, insertion or reordering
// breaks. Seq numbers an operation's own events 1, 2, 3… (see package
// audit for the canonical encoding and docs/audit.md for the design).
type Event struct {
	// Pos is the event's position in the store-wide chain (1, 2, 3…),
	// assigned by the store when it appends the event.
	Pos         int64  `json:"pos"`
	OperationID string `json:"operation_id"`
	// Seq is the event's number within its operation (1, 2, 3…).
	Seq      int64     `json:"seq"`
	At       time.Time `json:"at"`
	Kind     EventKind `json:"kind"`
	Data     EventData `json:"data"`
	PrevHash string    `json:"prev_hash,omitempty"`
	Hash     string    `json:"hash,omitempty"`
	// Payload is Data as the store keeps it: canonical JSON, or that JSON
	// sealed (encrypted) when the store seals payloads. The hash covers
	// these bytes, so a chain can be checked without the sealing key. A
	// store fills it in on append and on read; callers never set it.
	Payload []byte `json:"-"`
	// PayloadDigest is the lower-case hex SHA-256 of Payload, set by the
	// store on append and kept when a prune drops Payload, so the event's
	// hash (audit.Encode) still binds what the prune left. Empty on events
	// appended before stores recorded it.
	PayloadDigest string `json:"-"`
}

// EventData holds the facts of an event; fields that do not apply are left
// empty. It is the decision record of R24: with each status request, the
// state, the next planned time and who chose it, the request count of
// budget, the deadline, the response code, the parsed state and the
// resulting decision.
type EventData struct {
	State         string          `json:"state,omitempty"`
	PrevState     string          `json:"prev_state,omitempty"`
	ProviderState string          `json:"provider_state,omitempty"`
	HTTPStatus    int             `json:"http_status,omitempty"`
	Transport     string          `json:"transport_error,omitempty"`
	RequestID     string          `json:"provider_request_id,omitempty"`
	RetryAfter    string          `json:"retry_after,omitempty"`
	RequestsUsed  int             `json:"status_requests_used,omitempty"`
	MaxRequests   int             `json:"max_status_requests,omitempty"`
	FailuresUsed  int             `json:"transport_failures_used,omitempty"`
	RateLimited   int             `json:"rate_limited_used,omitempty"`
	DeadlineAt    *time.Time      `json:"deadline_at,omitempty"`
	NextPollAt    *time.Time      `json:"next_poll_at,omitempty"`
	DelaySource   DelaySource     `json:"delay_source,omitempty"`
	Decision      string          `json:"decision,omitempty"`
	Reason        Reason          `json:"reason,omitempty"`
	Detail        string          `json:"detail,omitempty"`
	Hint          string          `json:"hint,omitempty"`
	Actor         *Actor          `json:"actor,omitempty"`
	Option        string          `json:"option,omitempty"`
	Elapsed       string          `json:"elapsed,omitempty"`
	Options       []Option        `json:"options,omitempty"`
	ProviderJobID string          `json:"provider_job_id,omitempty"`
	ProviderError json.RawMessage `json:"provider_error,omitempty"`
	// URL is where a result fetch went, with no secret in it (the
	// credential travels in a header, never in a URL).
	URL string `json:"url,omitempty"`
	// Bytes and SHA256 describe a fetched result as it was handed over.
	Bytes  int64  `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Pages is how many answers a paged result fetch read.
	Pages int `json:"pages,omitempty"`
	// Incident is the id of the provider incident the event is about.
	Incident string `json:"incident,omitempty"`
}

// EventContractChanged records that an operation was taken up again
// under an edited contract of the same name whose change could widen
// nothing (policy.ContractChange): what changed, old → new, and the
// limits the operation keeps.
const EventContractChanged EventKind = "contract_changed"
