package httpapi

import (
	"net/http"
	"net/url"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// create hands a job over (POST /v1/operations). The operation id is the
// idempotency key over the whole body: the same id with the same body
// answers 200 with the stored record, with another body 409; a new id
// 201. Without an operation_id the id is derived from the contract, the
// job, the credential's name and the caller's token, so that a retry
// without one resumes too.
func (a *api) create(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	var req operations.CreateRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	caller := callerOf(r)
	op, created, err := a.ops.Create(r.Context(), operations.CreateParams{Caller: caller, CreateRequest: req, SameRequest: true, Door: "POST /v1/operations"})
	if err != nil {
		return problem(err)
	}
	if !created {
		writeJSON(w, http.StatusOK, caller.Outcome(op))
		return nil
	}
	w.Header().Set("Location", "/v1/operations/"+url.PathEscape(op.ID))
	writeJSON(w, http.StatusCreated, caller.Outcome(op))
	return nil
}
