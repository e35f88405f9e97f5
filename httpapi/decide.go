package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
)

// extensionRequest is the body of POST …/extension-requests.
type extensionRequest struct {
	ExtraTime           string `json:"extra_time"`
	ExtraStatusRequests int    `json:"extra_status_requests"`
	Justification       string `json:"justification"`
}

// maxJustification keeps a request readable as one line of the story.
const maxJustification = 2000

// requestExtension records an agent's request for more time or requests
// (R20). It grants nothing: the limits stay as they are until an approver
// decides. It answers 202 with the record, unchanged, so the agent sees
// that nothing was granted.
func (a *api) requestExtension(w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error {
	id := r.PathValue("id")
	var req extensionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	var problems []string
	d, err := time.ParseDuration(req.ExtraTime)
	if err != nil || d <= 0 {
		problems = append(problems, fmt.Sprintf("extra_time %s: want a positive duration such as 15m", clip(req.ExtraTime)))
	}
	if req.ExtraStatusRequests < 1 {
		problems = append(problems, fmt.Sprintf("extra_status_requests must be at least 1, got %d", req.ExtraStatusRequests))
	}
	just := strings.TrimSpace(req.Justification)
	switch {
	case just == "":
		problems = append(problems, "justification is required: say why the approver should grant more")
	case len(just) > maxJustification:
		problems = append(problems, fmt.Sprintf("justification is longer than %d bytes", maxJustification))
	}
	if len(problems) > 0 {
		return unprocessable("%s", strings.Join(problems, "; "))
	}
	op, err := a.visible(r, id)
	if err != nil {
		return err
	}
	if op.Phase.Finished() {
		return conflict("operation %s is %s; there is nothing to extend", op.ID, op.Phase)
	}
	ext := controller.ExtensionRequest{ExtraTime: d, ExtraStatusRequests: req.ExtraStatusRequests, Justification: just}
	op, err = retryBusy(r.Context(), a.clock, func() (*pollwarden.Operation, error) {
		return a.ctl.RequestExtension(r.Context(), id, who, ext)
	})
	if err != nil {
		return saveError(err, id)
	}
	writeJSON(w, http.StatusAccepted, pollwarden.OutcomeOf(op))
	return nil
}

// decisionRequest is the body of POST …/decisions.
type decisionRequest struct {
	Option string `json:"option"`
	Note   string `json:"note,omitempty"`
}

// cancelRequest is the optional body of POST …/cancel.
type cancelRequest struct {
	Note string `json:"note,omitempty"`
}

const maxNote = 2000

// decide applies an approver's answer to an escalation (R20) through
// controller.Decide, which records who, when, the state, the calls made
// and the new limits. The operation must be escalated and offer the
// option, else 409: the caller's view of the operation is out of date.
func (a *api) decide(w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error {
	var req decisionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Option == "" {
		return unprocessable("option is required: one of the escalation's options[].id")
	}
	return a.applyDecision(w, r, who, req.Option, req.Note)
}

// cancel runs the contract's cancel action (R23) for a waiting operation
// at any time, or an escalated one that offers it. It is the same
// decision as choosing cancel_at_provider (controller.Cancel): the cancel
// is recorded, phase cancelling, before the request leaves; the request
// is sent once and its answer recorded as its own action; the operation
// then keeps observing until the provider reports an end state. A second
// cancel sends nothing (unless the contract documents cancel as
// idempotent) and answers the record as it is.
func (a *api) cancel(w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error {
	var req cancelRequest
	if err := optionalBody(w, r, &req); err != nil {
		return err
	}
	return a.applyDecision(w, r, who, pollwarden.OptionCancel, req.Note)
}

func (a *api) applyDecision(w http.ResponseWriter, r *http.Request, who pollwarden.Actor, option, note string) error {
	id := r.PathValue("id")
	if len(note) > maxNote {
		return unprocessable("note is longer than %d bytes", maxNote)
	}
	op, err := a.store.OperationGet(r.Context(), id)
	if err != nil {
		return storeError(err, id)
	}
	ex, ok := a.contracts.Get(op.Contract)
	if !ok {
		return conflict("operation %s uses contract %s, which is not loaded now", op.ID, op.Contract)
	}
	if err := offered(op, ex, option); err != nil {
		return err
	}
	// The decision and a cancel call are not abandoned halfway when the
	// caller hangs up: what was decided is recorded, with its action.
	next, err := a.ctl.Decide(context.WithoutCancel(r.Context()), ex, id, policy.DecisionParams{Option: option, Actor: who, Note: note})
	if err != nil {
		return saveError(err, id)
	}
	writeJSON(w, http.StatusOK, pollwarden.OutcomeOf(next))
	return nil
}

// offered says, as a 409 a person can act on, why option cannot be
// chosen for op now. policy.Apply and policy.RequestCancel check the same
// again under the save; a cancel, and a decision on a cancelling
// operation, are left to them, since they depend on the cancel's record.
func offered(op *pollwarden.Operation, ex *contract.Extractor, option string) error {
	switch {
	case option == pollwarden.OptionCancel && ex.Contract().Cancel == nil:
		return conflict("contract %s documents no cancel action, so cancel at provider is not offered", op.Contract)
	case option == pollwarden.OptionCancel, op.Phase == pollwarden.PhaseCancelling:
		return nil
	case !op.Phase.AwaitsDecision() || op.Escalation == nil:
		return conflict("operation %s is %s, not escalated: there is no decision to make", op.ID, op.Phase)
	}
	var ids []string
	for _, o := range op.Escalation.Options {
		ids = append(ids, o.ID)
	}
	if slices.Contains(ids, option) {
		return nil
	}
	return conflict("option %s is not offered for operation %s; choose one of %s", clip(option), op.ID, strings.Join(ids, ", "))
}

// saveError maps errors of a controller write: a concurrent change or a
// decision the record no longer allows is a conflict, not a server fault.
func saveError(err error, id string) error {
	switch {
	case errors.Is(err, pollwarden.ErrNotFound):
		return storeError(err, id)
	case errors.Is(err, pollwarden.ErrConflict), errors.Is(err, pollwarden.ErrLeaseHeld), errors.Is(err, pollwarden.ErrLeaseLost):
		return conflict("operation %s changed while this request was applied; read it again and retry", id)
	case errors.Is(err, pollwarden.ErrInvalid):
		return conflict("%s", strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
	case errors.Is(err, pollwarden.ErrForbidden):
		return errorf(http.StatusForbidden, codeForbidden, "%s", strings.TrimPrefix(err.Error(), pollwarden.ErrForbidden.Error()+": "))
	}
	return internal(err)
}

// busyRetry bounds how long a write waits for a status request in flight
// (whose owner holds the lease) to be persisted.
const busyRetry = 5 * time.Second

// retryBusy retries f while the record is being changed by a step. Only
// writes that save once and re-read the record first may use it: a retry
// then starts over from the current record and never repeats an effect.
func retryBusy(ctx context.Context, clock pollwarden.Clock, f func() (*pollwarden.Operation, error)) (*pollwarden.Operation, error) {
	deadline := clock.Now().Add(busyRetry)
	for {
		op, err := f()
		busy := errors.Is(err, pollwarden.ErrConflict) || errors.Is(err, pollwarden.ErrLeaseHeld)
		if !busy || clock.Now().After(deadline) {
			return op, err
		}
		if clock.Sleep(ctx, 50*time.Millisecond) != nil {
			return op, err
		}
	}
}
