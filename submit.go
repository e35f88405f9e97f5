package pollwarden

import (
	"encoding/json"
	"time"
)

// PhaseSubmitting: the operation's submission is recorded and may have
// been sent, but no answer naming the job is recorded yet. Nothing polls
// it; only the submission flow (controller.SubmitJob) moves it on.
const PhaseSubmitting Phase = "submitting"

// Submitting reports whether the job's submission is still unanswered:
// no status request may go until the answer names the job.
func (p Phase) Submitting() bool { return p == PhaseSubmitting }

// OptionResubmit is offered when a submission's fate is unknown: an
// approver may send it again (with the stored idempotency key where the
// contract declares one).
const OptionResubmit = "resubmit"

// The submission events.
const (
	EventSubmissionSent     EventKind = "submission_sent"
	EventSubmissionAnswered EventKind = "submission_answered"
)

// SubmitSpec is the contract's `submit` block: how pollwarden itself
// starts the job, so that the caller never holds the credential and a
// timeout never turns into a second job.
type SubmitSpec struct {
	URL     string
	Method  string
	Headers map[string]string
	// JobIDPath is a JMESPath to the job id in the answer's body; "" only
	// with a StatusLocation, which then names the job by itself.
	JobIDPath string
	// StatusLocation is "header:NAME" or "body:JMESPATH"; "" means the
	// status URL is status.url with the job id.
	StatusLocation string
	// IdempotencyKeyHeader is set only where the provider documents
	// idempotent submission; only then is a submission ever sent twice.
	IdempotencyKeyHeader string
	// MaxAttempts bounds the sends of one submission (1 without a key).
	MaxAttempts int
}

// The states of a submission.
const (
	SubmissionPending  = "pending"  // recorded, not (or no longer) in flight
	SubmissionSent     = "sent"     // attempt N recorded as sent, no answer recorded
	SubmissionAccepted = "accepted" // the job id (and status location) recorded
	SubmissionRefused  = "refused"  // the provider refused it; no job exists
	SubmissionUnknown  = "unknown"  // the provider may or may not have the job
)

// Submission is the record of the one submission of an operation's job:
// written before it is sent, updated before each send and with each
// answer. The body is kept so that a resume (or an approver's resubmit)
// sends the same request; it is the caller's, never a secret.
type Submission struct {
	State          string          `json:"state"`
	BodySHA256     string          `json:"body_sha256"`
	Body           json.RawMessage `json:"body"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	MaxAttempts    int             `json:"max_attempts"`
	Attempts       int             `json:"attempts"`
	SentAt         *time.Time      `json:"sent_at,omitempty"`
	AnsweredAt     *time.Time      `json:"answered_at,omitempty"`
	HTTPStatus     int             `json:"http_status,omitempty"`
	RequestID      string          `json:"provider_request_id,omitempty"`
	Detail         string          `json:"detail,omitempty"`
}

// Clone returns a deep copy.
func (s *Submission) Clone() *Submission {
	if s == nil {
		return nil
	}
	c := *s
	c.Body = append(json.RawMessage(nil), s.Body...)
	c.SentAt = cloneTime(s.SentAt)
	c.AnsweredAt = cloneTime(s.AnsweredAt)
	return &c
}
