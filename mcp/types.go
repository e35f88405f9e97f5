package mcp

import (
	"encoding/json"
	"time"

	"github.com/pollwarden/pollwarden"
)

// WatchJobIn is watch_job's input.
type WatchJobIn struct {
	Contract          string            `json:"contract" jsonschema:"name of a loaded contract (see this tool's description)"`
	JobID             string            `json:"job_id,omitempty" jsonschema:"the provider's job id; give this or status_url"`
	StatusURL         string            `json:"status_url,omitempty" jsonschema:"the job's status URL as the provider returned it; its scheme, host and port must be one of the contract's origins; give this or job_id"`
	Vars              map[string]string `json:"vars,omitempty" jsonschema:"values for the variables the contract declares (such as owner and repo), each matching its pattern"`
	OperationID       string            `json:"operation_id,omitempty" jsonschema:"your id for this wait; omit it to get one derived from the contract and job, so a repeated call resumes"`
	Deadline          string            `json:"deadline,omitempty" jsonschema:"a duration from now (40m) or an RFC 3339 time; may only lower the contract's deadline"`
	MaxStatusRequests *int              `json:"max_status_requests,omitempty" jsonschema:"at least 1; may only lower the contract's budget"`
	Priority          *int              `json:"priority,omitempty" jsonschema:"when a shared quota is what limits: 5 by default, up to 9 (least urgent); you may only lower it (a larger number), never below 5"`
}

// OperationIn names one operation.
type OperationIn struct {
	OperationID string `json:"operation_id" jsonschema:"the operation_id returned by watch_job"`
}

// WaitJobIn is wait_job's input.
type WaitJobIn struct {
	OperationID    string `json:"operation_id" jsonschema:"the operation_id returned by watch_job"`
	MaxWaitSeconds *int   `json:"max_wait_seconds,omitempty" jsonschema:"how long to hold, 1 to 600 (default 50); above 50 only if your client's request timeout allows it or resets on progress"`
}

// ListJobsIn is list_jobs' input.
type ListJobsIn struct {
	Phase string `json:"phase,omitempty" jsonschema:"only operations in this phase: waiting, succeeded, failed, cancelled, expired or escalated"`
}

// RequestExtensionIn is request_extension's input.
type RequestExtensionIn struct {
	OperationID         string `json:"operation_id" jsonschema:"the operation_id returned by watch_job"`
	ExtraTime           string `json:"extra_time" jsonschema:"more time asked for, as a duration (15m); 0s for none"`
	ExtraStatusRequests int    `json:"extra_status_requests" jsonschema:"more status requests asked for; 0 for none"`
	Justification       string `json:"justification" jsonschema:"why, for the person who decides"`
}

// Answers.

// JobAnswer is the operation record with the outcome field names, and
// guidance on what to do next, as one flat JSON object.
type JobAnswer struct {
	Outcome pollwarden.Outcome
	// Guidance says, in words, what the phase means for the caller.
	Guidance string
}

// MarshalJSON flattens the answer: the outcome's fields and "guidance".
func (a JobAnswer) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(a.Outcome)
	if err != nil {
		return nil, err
	}
	g, err := json.Marshal(a.Guidance)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"guidance":`...)
	return append(append(b, g...), '}'), nil
}

// ListAnswer is list_jobs' answer.
type ListAnswer struct {
	Operations []pollwarden.Outcome `json:"operations"`
}

// ExtensionAnswer is request_extension's answer.
type ExtensionAnswer struct {
	OperationID         string `json:"operation_id"`
	Granted             bool   `json:"granted" jsonschema:"always false: an agent's request grants nothing"`
	ExtraTime           string `json:"extra_time"`
	ExtraStatusRequests int    `json:"extra_status_requests"`
	// The limits as they stand, unchanged by the request.
	DeadlineAt        time.Time `json:"deadline_at"`
	MaxStatusRequests int       `json:"max_status_requests"`
	Message           string    `json:"message"`
}
