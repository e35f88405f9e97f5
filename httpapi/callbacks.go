package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// maxCallbackBody bounds a provider callback's body: OpenAI's batch events
// are a few hundred bytes, GitHub's workflow_run events tens of KiB.
const maxCallbackBody = 1 << 20

// callbackAnswer is the one answer of an accepted callback, the same
// whether or not it woke anything, so a caller holding the secret learns
// nothing about which jobs exist.
type callbackAnswer struct {
	Accepted bool `json:"accepted"`
}

// callback serves POST /v1/callbacks/{contract}: a provider saying that a
// job ended. No bearer token: the signature, checked by the use case
// (operations.Service.Callback) with the contract's secret, is the
// authentication; one that does not verify answers 401.
func (a *api) callback(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	if r.ContentLength > maxCallbackBody {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallbackBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge()
		}
		return errorf(http.StatusBadRequest, codeInvalidJSON, "cannot read the callback body: %v", err)
	}
	err = a.ops.Callback(r.Context(), operations.CallbackParams{Contract: r.PathValue("contract"), Header: r.Header.Get, Body: body})
	if err != nil {
		return problem(err)
	}
	writeJSON(w, http.StatusAccepted, callbackAnswer{Accepted: true})
	return nil
}
