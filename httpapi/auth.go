package httpapi

import (
	"net/http"
	"strings"

	"github.com/pollwarden/pollwarden/tokens"
)

// authenticate finds who presents the request's bearer token: no token or
// an unknown one is 401 (SPEC). What the token's role may do is
// operations' table (Caller.May). Messages never repeat the token.
func (a *api) authenticate(r *http.Request) (tokens.Caller, *apiError) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return tokens.Caller{}, errorf(http.StatusUnauthorized, codeUnauthorized, "send Authorization: Bearer <token>")
	}
	who, ok := a.tokens.Identify(strings.TrimSpace(token))
	if !ok {
		return tokens.Caller{}, errorf(http.StatusUnauthorized, codeUnauthorized, "unknown token")
	}
	return who, nil
}
