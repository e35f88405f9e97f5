package pollwarden

import (
	"encoding/json"
	"time"
)

// Outcome is the public view of an operation: the fixed field names of the
// `wait --json` output, API answers and MCP answers. It carries no secret;
// the credential appears only by name.
type Outcome struct {
	OperationID           string            `json:"operation_id"`
	Contract              string            `json:"contract"`
	ProviderJobID         string            `json:"provider_job_id"`
	StatusURL             string            `json:"status_url,omitempty"`
	Vars                  map[string]string `json:"vars,omitempty"`
	Phase                 Phase             `json:"phase"`
	Outcome               *Phase            `json:"outcome"`
	Reason                *Reason           `json:"reason"`
	LastState             *string           `json:"last_state"`
	LastProviderState     string            `json:"last_provider_state,omitempty"`
	Result                json.RawMessage   `json:"result"`
	ProviderError         json.RawMessage   `json:"provider_error"`
	StatusRequestsUsed    int               `json:"status_requests_used"`
	MaxStatusRequests     int               `json:"max_status_requests"`
	TransportFailuresUsed int               `json:"transport_failures_used"`
	MaxTransportFailures  int               `json:"max_transport_failures"`
	RateLimitedUsed       int               `json:"rate_limited_used"`
	MaxRateLimited        int               `json:"max_rate_limited"`
	CredentialName        string            `json:"credential_name,omitempty"`
	StartedAt             time.Time         `json:"started_at"`
	DeadlineAt            time.Time         `json:"deadline_at"`
	FinishedAt            *time.Time        `json:"finished_at"`
	NextPollAt            *time.Time        `json:"next_poll_at,omitempty"`
	LastHTTPStatus        *int              `json:"last_http_status"`
	LastHTTPAt            *time.Time        `json:"last_http_at"`
	Escalation            *Escalation       `json:"escalation"`
	// Cancel is the cancel at the provider, when one was asked for.
	Cancel *CancelRecord `json:"cancel,omitempty"`
	// LastDecision is who answered the latest escalation, with what, and
	// when.
	LastDecision *DecisionRecord `json:"last_decision,omitempty"`
	// Priority is the operation's place when a shared quota is what
	// limits: 1 (most urgent) to 9, 5 when none was given.
	Priority int `json:"priority"`
}

// OutcomeOf builds the public view of op. "outcome" is null while the
// operation is still waiting or cancelling; "phase" always says where it
// stands. The status URL is shown cut (ShownURL): see OutcomeFor for the
// one reader who gets it whole.
func OutcomeOf(op *Operation) Outcome {
	o := Outcome{
		OperationID: op.ID, Contract: op.Contract, ProviderJobID: op.ProviderJobID, StatusURL: ShownURL(op.StatusURL),
		Vars: op.Vars, Phase: op.Phase, Result: nullJSON(op.Result), ProviderError: nullJSON(op.ProviderError),
		StatusRequestsUsed: op.StatusRequestsUsed, MaxStatusRequests: op.MaxStatusRequests,
		TransportFailuresUsed: op.TransportFailuresUsed, MaxTransportFailures: op.MaxTransportFailures,
		RateLimitedUsed: op.RateLimitedUsed, MaxRateLimited: op.MaxRateLimited, CredentialName: op.CredentialName,
		StartedAt: op.StartedAt, DeadlineAt: op.DeadlineAt, FinishedAt: op.FinishedAt, Priority: op.EffectivePriority(),
		LastHTTPAt: op.LastHTTPAt, Escalation: op.Escalation, Cancel: op.Cancel, LastDecision: op.LastDecision,
	}
	if !op.Phase.Polling() {
		p := op.Phase
		o.Outcome = &p
	} else {
		n := op.NextPollAt
		o.NextPollAt = &n
	}
	if op.Reason != "" {
		r := op.Reason
		o.Reason = &r
	}
	o.LastProviderState = op.LastProviderState
	if op.LastState != "" {
		s := op.LastState
		o.LastState = &s
	}
	if op.LastHTTPAt != nil {
		c := op.LastHTTP
		o.LastHTTPStatus = &c
	}
	return o
}

func nullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
