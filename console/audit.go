package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/operations"
)

// auditHead shows an admin the head of the store's hash chain, to write
// down and compare later, and the button that verifies the chain.
func (c *Console) auditHead(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		c.signinPage(w, r, http.StatusUnauthorized, "Sign in to see the audit chain.")
		return
	}
	c.showAudit(w, r, v, "", "")
}

func (c *Console) showAudit(w http.ResponseWriter, r *http.Request, v viewer, verdict, broken string) {
	if (operations.Caller{Caller: v.Caller}).May(operations.ActionAudit, nil, "") != nil {
		c.fail(w, r, http.StatusForbidden, "The audit chain's head and its verification are for admins.")
		return
	}
	pos, hash, err := c.ops.AuditHead(r.Context(), operations.Caller{Caller: v.Caller})
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "audit", map[string]any{"Viewer": v, "Pos": pos, "Hash": hash, "Verdict": verdict, "Broken": broken})
}

// verifyAudit walks the whole chain, as `pollwarden audit verify` does,
// and shows the verdict: intact with its head, or the first bad event.
func (c *Console) verifyAudit(w http.ResponseWriter, r *http.Request) {
	v, ok := c.postBy(w, r)
	if !ok {
		return
	}
	if (operations.Caller{Caller: v.Caller}).May(operations.ActionAudit, nil, "") != nil {
		c.fail(w, r, http.StatusForbidden, "The audit chain's verification is for admins.")
		return
	}
	ver := &audit.Verifier{}
	err := c.ops.VerifyAudit(r.Context(), operations.Caller{Caller: v.Caller}, ver)
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		c.showAudit(w, r, v, "", clean(ce.Error()))
	case err != nil:
		c.internal(w, r, err)
	default:
		c.showAudit(w, r, v, fmt.Sprintf("Intact: %d operations, %d events; head %s at position %d.",
			ver.Operations(), ver.Pos(), ver.Hash(), ver.Pos()), "")
	}
}
