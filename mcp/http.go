package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/tokens"
)

// Path is where the daemon serves MCP over streamable HTTP.
const Path = "/mcp"

// HTTPHandler serves an MCP server over streamable HTTP behind the
// daemon's bearer tokens: every request must carry Authorization: Bearer
// <token> of a token in the tokens file whose role is agent, approver or
// admin. No token or an unknown one is 401, another role 403, with the
// API's JSON error body. A session is bound to the token's name that
// opened it, so another token cannot use its session id. Each request acts
// as its token: an agent sees only the operations it created (unless its
// entry says scope: all), and the audit names the token for what it does.
type HTTPHandler struct {
	tokens *tokens.Set
	next   http.Handler

	// streams is cancelled by Close.
	streams context.Context
	close   context.CancelFunc
}

// NewHTTPHandler wraps srv (from NewServer) for the daemon. srv must
// serve only through it: it makes every request of srv act as its token.
func NewHTTPHandler(srv *sdk.Server, tokens *tokens.Set, log *slog.Logger) *HTTPHandler {
	h := &HTTPHandler{tokens: tokens}
	h.streams, h.close = context.WithCancel(context.Background())
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Logger: log, SessionTimeout: 30 * time.Minute})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		who, ok := tokens.Identify(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who.Name, Extra: map[string]any{callerInfoKey: who}}, nil
	}
	srv.AddReceivingMiddleware(withCaller)
	h.next = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(taskBodies(streamable))
	return h
}

// Close ends every open MCP stream (a client reconnects after a restart);
// pass it to http.Server.RegisterOnShutdown, since Shutdown waits for
// streams that would otherwise stay open.
func (h *HTTPHandler) Close() { h.close() }

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, code, msg := h.authorize(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pollwarden"`)
		}
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		body.Error.Code, body.Error.Message = code, msg
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	// An MCP stream (a standalone GET, a subscriptions/listen) may stay
	// open far longer than the API's write timeout; wait_job bounds its
	// own holds. Shutdown closes the streams.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.streams, cancel)
	defer stop()
	h.next.ServeHTTP(w, r.WithContext(ctx))
}

// authorize returns a non-zero status with the API's error code and
// message when the request may not use MCP. Messages never repeat the
// token.
func (h *HTTPHandler) authorize(r *http.Request) (int, string, string) {
	hv := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(hv, " ")
	token = strings.TrimSpace(token)
	if hv == "" || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token>"
	}
	who, ok := h.tokens.Lookup(token)
	if !ok {
		return http.StatusUnauthorized, "unauthorized", "unknown token"
	}
	switch who.Role {
	case pollwarden.RoleAgent, pollwarden.RoleApprover, pollwarden.RoleAdmin:
		return 0, "", ""
	}
	return http.StatusForbidden, "forbidden", fmt.Sprintf("%s is %s; MCP needs an agent, approver or admin token", who.Name, who.Role)
}
