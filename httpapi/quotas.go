package httpapi

import (
	"net/http"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// quotasAnswer wraps the keys so that fields can be added later without
// breaking clients.
type quotasAnswer struct {
	Quotas []operations.QuotaView `json:"quotas"`
}

// quotas answers every shared quota key with what was taken of it and the
// operations waiting on it (GET /v1/quotas, approver).
func (a *api) quotas(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	views, err := a.ops.Quotas(r.Context(), callerOf(r), a.clock.Now())
	if err != nil {
		return problem(err)
	}
	writeJSON(w, http.StatusOK, quotasAnswer{Quotas: views})
	return nil
}
