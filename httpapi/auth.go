package httpapi

import (
	"net/http"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/tokens"
)

// authenticate finds who presents the request's bearer token and checks
// the role the route needs: no token or an unknown one is 401, a known
// token with too small a role 403 (SPEC). Messages never repeat the token.
func (a *api) authenticate(r *http.Request, need access) (tokens.Caller, *apiError) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return tokens.Caller{}, errorf(http.StatusUnauthorized, codeUnauthorized, "send Authorization: Bearer <token>")
	}
	who, ok := a.tokens.Identify(strings.TrimSpace(token))
	if !ok {
		return tokens.Caller{}, errorf(http.StatusUnauthorized, codeUnauthorized, "unknown token")
	}
	if rank(who.Role) < need {
		return who, errorf(http.StatusForbidden, codeForbidden, "%s is %s; this needs %s", who.Name, who.Role, roleNeeded(need))
	}
	return who, nil
}

func rank(r pollwarden.Role) access {
	switch r {
	case pollwarden.RoleAgent:
		return agents
	case pollwarden.RoleApprover:
		return approvers
	case pollwarden.RoleAdmin:
		return admins
	}
	return anyone
}

func roleNeeded(need access) string {
	switch need {
	case agents:
		return "an agent, approver or admin token"
	case approvers:
		return "an approver or admin token (a decision grants authority)"
	}
	return "an admin token"
}
