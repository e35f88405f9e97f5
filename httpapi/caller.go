package httpapi

import (
	"net/http"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/tokens"
)

// callerOf is the caller the guard authenticated for r; the zero Caller
// (who sees nothing) when there is none.
func callerOf(r *http.Request) tokens.Caller {
	if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return info.caller
	}
	return tokens.Caller{}
}

// visible returns the operation id for who, or the same 404 as for an id
// that does not exist when who may not see it: another agent's operation
// is not even confirmed to exist.
func (a *api) visible(r *http.Request, id string) (*pollwarden.Operation, error) {
	op, err := a.store.OperationGet(r.Context(), id)
	if err != nil {
		return nil, storeError(err, id)
	}
	if !callerOf(r).Sees(op) {
		return nil, storeError(pollwarden.ErrNotFound, id)
	}
	return op, nil
}
