package pollwarden

import "time"

// CancelState says how far a cancel at the provider got (R23).
type CancelState string

// The cancel states.
const (
	// CancelRecorded: the cancel is recorded and about to be sent, or was
	// being sent; its result is not known yet. A record left in this state
	// by a process that ended during the call is marked CancelInterrupted.
	CancelRecorded CancelState = "recorded"
	// CancelAnswered: the provider answered the cancel request (HTTPStatus
	// says how; a 2xx is an acceptance, not yet the job's end).
	CancelAnswered CancelState = "answered"
	// CancelUnanswered: the request was sent and no answer came (timeout,
	// connection reset): the provider may or may not have received it.
	CancelUnanswered CancelState = "unanswered"
	// CancelInterrupted: the process recording the cancel ended during the
	// call; the provider may or may not have received it.
	CancelInterrupted CancelState = "interrupted"
	// CancelNotSent: nothing left this process (no credential, an unusable
	// URL): nothing was cancelled.
	CancelNotSent CancelState = "not_sent"
)

// CancelRecord is what an operation keeps about a cancel at the provider:
// who asked and when, how many requests were begun, and what the provider
// answered. It is written before the request is sent, so a crash leaves a
// record of the cancel, never an unrecorded one.
type CancelRecord struct {
	State       CancelState `json:"state"`
	RequestedAt time.Time   `json:"requested_at"`
	RequestedBy Actor       `json:"requested_by"`
	// Attempts counts cancel requests begun: more than one only where the
	// contract documents cancel as idempotent (or an earlier one was
	// known not to be sent).
	Attempts   int        `json:"attempts"`
	HTTPStatus int        `json:"http_status,omitempty"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
	Detail     string     `json:"detail,omitempty"`
}

// InForce reports whether a cancel may have reached the provider: every
// state but CancelNotSent. While it is in force the operation observes
// the job's end instead of waiting for its result, and a second cancel
// request is sent only where the contract says cancel is idempotent.
func (c *CancelRecord) InForce() bool { return c != nil && c.State != CancelNotSent }
