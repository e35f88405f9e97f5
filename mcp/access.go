package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/tokens"
)

// callerKey carries, in a request's context, the token that sent it over
// the daemon's /mcp (see NewHTTPHandler). Its absence means the stdio
// server: the operator's own process, whose authority is access to the
// store file, so it sees every operation.
type callerKey struct{}

// identity is who sends an MCP request.
type identity struct {
	caller tokens.Caller
	// remote: the request came through the daemon's /mcp with a token;
	// caller then decides what it sees. Otherwise it is the local stdio
	// server, which sees everything.
	remote bool
}

func (s *server) who(ctx context.Context) identity {
	if c, ok := ctx.Value(callerKey{}).(tokens.Caller); ok {
		return identity{caller: c, remote: true}
	}
	return identity{}
}

func (id identity) sees(op *pollwarden.Operation) bool {
	return !id.remote || id.caller.Sees(op)
}

// actor is who the audit names for what the caller does: the token's name
// and role, or mcp-agent for the stdio server.
func (id identity) actor() pollwarden.Actor {
	if id.remote {
		return id.caller.Actor
	}
	return Actor
}

// owner is recorded as the Owner of the operations the caller creates.
func (s *server) owner(id identity) string {
	if id.remote {
		return id.caller.Name
	}
	return s.o.Owner
}

// listOwner is the list filter for the caller; ok is false when it may
// list nothing.
func (id identity) listOwner() (string, bool) {
	if !id.remote {
		return "", true
	}
	return id.caller.ListOwner()
}

// derivedOwner is the owner part of the id watch_job derives when the
// caller names none (pollwarden.DerivedOperationID): over /mcp the
// token's name, so two agents watching one provider job each get their
// own operation; "" for the stdio server.
func (id identity) derivedOwner() string {
	if !id.remote {
		return ""
	}
	return id.caller.Name
}

// errTaken refuses an operation id that belongs to an operation the
// caller may not see, saying nothing of that operation.
func errTaken(opID string) error {
	return fmt.Errorf("operation_id %s is already in use; choose another, or omit operation_id to get one derived from the contract and job", clip(opID))
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
// reported as not found, as for an id that does not exist.
func (s *server) visible(ctx context.Context, id string) (*pollwarden.Operation, error) {
	op, err := s.o.Store.OperationGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.who(ctx).sees(op) {
		return nil, fmt.Errorf("mcp: operation %q: %w", id, pollwarden.ErrNotFound)
	}
	return op, nil
}

// taken refuses id when it belongs to an operation the caller may not see.
func (s *server) taken(ctx context.Context, id string) error {
	op, err := s.o.Store.OperationGet(ctx, id)
	switch {
	case errors.Is(err, pollwarden.ErrNotFound):
		return nil
	case err != nil:
		return internal(err)
	case !s.who(ctx).sees(op):
		return errTaken(id)
	}
	return nil
}
