package httpapi

import (
	"net/http"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// extensionRequest is the body of POST …/extension-requests.
type extensionRequest struct {
	ExtraTime           string `json:"extra_time"`
	ExtraStatusRequests int    `json:"extra_status_requests"`
	Justification       string `json:"justification"`
}

// requestExtension records an agent's request for more time or requests
// (R20). It grants nothing, and answers 202 with the record, unchanged,
// so the agent sees that nothing was granted.
func (a *api) requestExtension(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	var req extensionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	op, _, err := a.ops.RequestExtension(r.Context(), operations.ExtensionParams{Caller: callerOf(r), ID: r.PathValue("id"),
		ExtraTime: req.ExtraTime, ExtraStatusRequests: req.ExtraStatusRequests, Justification: req.Justification})
	if err != nil {
		return problem(err)
	}
	writeJSON(w, http.StatusAccepted, pollwarden.OutcomeOf(op))
	return nil
}

// decisionRequest is the body of POST …/decisions.
type decisionRequest struct {
	Option string `json:"option"`
	Note   string `json:"note,omitempty"`
	// Escalation is the escalation.id answered; a stale one is a 409.
	Escalation string `json:"escalation,omitempty"`
}

// cancelRequest is the optional body of POST …/cancel and …/abandon.
type cancelRequest struct {
	Note string `json:"note,omitempty"`
}

// decide applies an approver's answer to an escalation (R20); 409 when
// the operation does not offer the option now, or the escalation named is
// not its open question.
func (a *api) decide(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	var req decisionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	return a.answer(w, http.StatusOK)(a.ops.Decide(r.Context(), operations.DecisionParams{Caller: callerOf(r), ID: r.PathValue("id"), Option: req.Option, Note: req.Note,
		Escalation: req.Escalation}))
}

// cancel runs the contract's cancel action (R23) as an approver's
// decision: recorded, phase cancelling, before the request leaves; a
// second cancel sends nothing unless the contract documents cancel as
// idempotent, and answers the record as it is.
func (a *api) cancel(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	var req cancelRequest
	if err := optionalBody(w, r, &req); err != nil {
		return err
	}
	return a.answer(w, http.StatusOK)(a.ops.Cancel(r.Context(), operations.DecisionParams{Caller: callerOf(r), ID: r.PathValue("id"), Note: req.Note}))
}

// abandon stops watching an operation (POST …/abandon): nothing is sent
// to the provider. An agent may abandon its own operations at any time,
// an approver any.
func (a *api) abandon(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	var req cancelRequest
	if err := optionalBody(w, r, &req); err != nil {
		return err
	}
	return a.answer(w, http.StatusOK)(a.ops.Abandon(r.Context(), operations.DecisionParams{Caller: callerOf(r), ID: r.PathValue("id"), Note: req.Note}))
}

// answer writes a use case's record with status, or its problem.
func (a *api) answer(w http.ResponseWriter, status int) func(*pollwarden.Operation, error) error {
	return func(op *pollwarden.Operation, err error) error {
		if err != nil {
			return problem(err)
		}
		writeJSON(w, status, pollwarden.OutcomeOf(op))
		return nil
	}
}
