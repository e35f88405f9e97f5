package httpapi

import (
	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// access is a role's rank, for the tests that compare the routes with the
// SPEC's table: an approver may do everything an agent may, an admin
// everything.
type access int

const (
	anyone access = iota
	agents
	approvers
	admins
)

// need is the least role operations' table (Caller.May) lets call rt,
// asked the way the guard asks it: before any record is read.
func need(rt route) access {
	if rt.act == public {
		return anyone
	}
	for i, role := range []pollwarden.Role{pollwarden.RoleAgent, pollwarden.RoleApprover, pollwarden.RoleAdmin} {
		c := operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: "someone", Role: role}}}
		if c.May(rt.act, nil, "") == nil {
			return agents + access(i)
		}
	}
	return admins + 1
}
