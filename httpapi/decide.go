package httpapi

import (
	"context"
	"errors"
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
	ext, err := controller.ParseExtension(req.ExtraTime, req.ExtraStatusRequests, req.Justification)
	if err != nil {
		return unprocessable("%s", strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
	}
	if _, err := a.visible(r, id); err != nil {
		return err
	}
	// The controller refuses a finished operation and retries while a
	// step holds the record.
	op, err := a.ctl.RequestExtension(r.Context(), id, who, ext)
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

// abandon stops watching an operation (POST …/abandon): nothing is sent
// to the provider, and a waiting operation closes as failed. It narrows
// authority, so an agent may do it to an operation it owns at any time,
// without an escalation first; an approver to any operation. It is
// recorded like a decision. An agent token that sees every operation
// (scope all) still stops only its own.
func (a *api) abandon(w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error {
	var req cancelRequest
	if err := optionalBody(w, r, &req); err != nil {
		return err
	}
	op, err := a.visible(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !who.Role.CanGrant() && op.Owner != who.Name {
		return errorf(http.StatusForbidden, codeForbidden, "operation %s belongs to %s; an agent may abandon only its own operations", op.ID, op.Owner)
	}
	return a.applyDecision(w, r, who, pollwarden.OptionAbandon, req.Note)
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
	case option == pollwarden.OptionAbandon && op.Phase == pollwarden.PhaseWaiting:
		return nil // narrowing is allowed at any time
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
	case errors.Is(err, pollwarden.ErrInvalid), errors.Is(err, pollwarden.ErrPhase):
		return conflict("%s", trimSentinel(err))
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

// trimSentinel is err's message without the sentinel's prefix, which says
// nothing to a caller that the status code does not.
func trimSentinel(err error) string {
	msg := err.Error()
	for _, s := range []error{pollwarden.ErrInvalid, pollwarden.ErrPhase} {
		msg = strings.TrimPrefix(msg, s.Error()+": ")
	}
	return msg
}
