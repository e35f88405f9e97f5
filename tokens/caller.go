package tokens

import (
	"github.com/pollwarden/pollwarden"
)

// Scope is what a tokens-file entry lets an agent see: its own operations
// (the default) or every operation.
type Scope string

// The scopes a tokens file may give.
const (
	ScopeOwn Scope = "own"
	ScopeAll Scope = "all"
)

// Caller is who presents a token, with what the tokens file lets it see.
// An agent token sees and acts on only the operations it created, unless
// its entry says scope: all; approvers and admins see every operation.
// The zero Caller sees nothing, so a request whose caller was somehow not
// set is refused rather than shown everything.
type Caller struct {
	pollwarden.Actor
	Scope Scope
}

// SeesAll reports whether c sees every operation, whoever created it.
func (c Caller) SeesAll() bool {
	switch c.Role {
	case pollwarden.RoleApprover, pollwarden.RoleAdmin:
		return true
	case pollwarden.RoleAgent:
		return c.Scope == ScopeAll
	}
	return false
}

// Sees reports whether c may read op and act on it. An operation with no
// owner (made before owners were recorded) is seen only by those who see
// all.
func (c Caller) Sees(op *pollwarden.Operation) bool {
	if op == nil {
		return false
	}
	if c.SeesAll() {
		return true
	}
	return c.Role == pollwarden.RoleAgent && c.Name != "" && op.Owner == c.Name
}

// ListOwner is the ListParams.Owner that keeps c's lists to what c sees:
// "" (every owner) for those who see all, else c's own name. ok is false
// when c may list nothing at all.
func (c Caller) ListOwner() (owner string, ok bool) {
	if c.SeesAll() {
		return "", true
	}
	if c.Role == pollwarden.RoleAgent && c.Name != "" {
		return c.Name, true
	}
	return "", false
}
