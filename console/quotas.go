package console

import (
	"net/http"

	"github.com/pollwarden/pollwarden/operations"
)

// quotas shows an approver every shared quota key: what its quota allows,
// what was taken of it in the current window, what the provider last said
// and which operations wait on it (the same use case as GET /v1/quotas).
func (c *Console) quotas(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		c.signinPage(w, r, http.StatusUnauthorized, "Sign in to see the shared quotas.")
		return
	}
	views, err := c.ops.Quotas(r.Context(), operations.Caller{Caller: v.Caller}, c.now())
	if operations.KindOf(err) == operations.Forbidden {
		c.fail(w, r, http.StatusForbidden, "The shared quotas and the operations waiting on them are for approvers.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "quotas", map[string]any{"Viewer": v, "Quotas": views})
}
