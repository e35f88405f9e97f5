package httpapi

import (
	"net/http"

	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// callerOf is the caller the guard authenticated for r; the zero Caller
// (who sees nothing) when there is none.
func callerOf(r *http.Request) operations.Caller {
	if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return operations.Caller{Caller: info.caller}
	}
	return operations.Caller{Caller: tokens.Caller{}}
}
