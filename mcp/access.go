package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// callerKey carries, in a request's context, the token that sent it over
// the daemon's /mcp (see NewHTTPHandler). Its absence means the stdio
// server: the operator's own process, whose authority is access to the
// store file, so it sees every operation.
type callerKey struct{}

// who is the caller of an MCP request: over /mcp the token's holder;
// otherwise the local stdio server, named Actor in the audit, which sees
// every operation and records Options.Owner as their owner. A tool never
// widens authority, whatever the token's role.
func (s *server) who(ctx context.Context) operations.Caller {
	if c, ok := ctx.Value(callerKey{}).(tokens.Caller); ok {
		return operations.Caller{Caller: c, Tool: true}
	}
	return operations.Caller{Caller: tokens.Caller{Actor: Actor}, Local: true, Owner: s.o.Owner, Tool: true}
}

// withCaller is the receiving middleware of the daemon's /mcp: it puts
// the token's caller, which the bearer check put in the request's token
// info, into the context every handler sees. A request without one gets
// the zero Caller, who sees nothing.
func withCaller(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		var c tokens.Caller
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
			c, _ = extra.TokenInfo.Extra[callerInfoKey].(tokens.Caller)
		}
		return next(context.WithValue(ctx, callerKey{}, c), method, req)
	}
}

// callerInfoKey names the Caller in auth.TokenInfo.Extra.
const callerInfoKey = "pollwarden.caller"

// visible reads operation id for the caller: one it may not see is
// reported as not found (pollwarden.ErrNotFound), as for an id that does
// not exist.
func (s *server) visible(ctx context.Context, id string) (*pollwarden.Operation, error) {
	op, err := s.ops.Get(ctx, s.who(ctx), id)
	if operations.KindOf(err) == operations.NotFound {
		return nil, fmt.Errorf("mcp: operation %q: %w", id, pollwarden.ErrNotFound)
	}
	return op, err
}
