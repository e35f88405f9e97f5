package pollwarden

import (
	"encoding/json"
	"time"
)

// EventKind names what an audit event records (R24).
type EventKind string

// The event kinds.
const (
	EventSubmitted          EventKind = "submitted"
	EventResumed            EventKind = "resumed"
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
)

// Event is one entry of an operation's audit trail. Events are appended in
// the same transaction as the record change they explain, and each carries
// the hash of the one before it (R25).
type Event struct {
	OperationID string    `json:"operation_id"`
	Seq         int64     `json:"seq"`
	At          time.Time `json:"at"`
	Kind        EventKind `json:"kind"`
	Data        EventData `json:"data"`
	PrevHash    string    `json:"prev_hash,omitempty"`
	Hash        string    `json:"hash,omitempty"`
}

// EventData holds the facts of an event; fields that do not apply are left
// empty. It is the decision record of R24: with each status request, the
// state, the next planned time and who chose it, the request count of
// budget, the deadline, the response code, the parsed state and the
// resulting decision.
type EventData struct {
	State         string          `json:"state,omitempty"`
	PrevState     string          `json:"prev_state,omitempty"`
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
}
