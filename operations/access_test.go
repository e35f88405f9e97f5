package operations

import (
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/tokens"
)

// TestMayIsTheTable: one line per action and caller, the whole answer of
// who may do what, which the API's guard, the console's buttons and every
// use case ask.
func TestMayIsTheTable(t *testing.T) {
	as := func(name string, role pollwarden.Role) Caller {
		return Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: name, Role: role}}}
	}
	agent, approver, admin := as("bot", pollwarden.RoleAgent), as("alice", pollwarden.RoleApprover), as("root", pollwarden.RoleAdmin)
	local := Caller{Caller: as("me", pollwarden.RoleAgent).Caller, Local: true}
	tool := approver
	tool.Tool = true
	mine := &pollwarden.Operation{ID: "op-1", Owner: "bot"}
	theirs := &pollwarden.Operation{ID: "op-2", Owner: "other"}
	for _, c := range []struct {
		name string
		c    Caller
		a    Action
		op   *pollwarden.Operation
		may  bool
	}{
		{"an agent creates", agent, ActionCreate, nil, true},
		{"an agent reads", agent, ActionRead, theirs, true},
		{"an agent asks for more", agent, ActionRequestExtension, mine, true},
		{"an agent does not decide", agent, ActionDecide, mine, false},
		{"an approver decides", approver, ActionDecide, theirs, true},
		{"an admin decides", admin, ActionDecide, theirs, true},
		{"an agent does not cancel", agent, ActionCancel, mine, false},
		{"an approver cancels", approver, ActionCancel, theirs, true},
		{"an agent abandons its own", agent, ActionAbandon, mine, true},
		{"an agent does not abandon another's", agent, ActionAbandon, theirs, false},
		{"an approver abandons any", approver, ActionAbandon, theirs, true},
		{"the store file's holder abandons any", local, ActionAbandon, theirs, true},
		{"an approver reads the incidents", approver, ActionIncidents, nil, true},
		{"an agent does not read the incidents", agent, ActionIncidents, nil, false},
		{"the store file's holder reads the incidents", local, ActionIncidents, nil, true},
		{"an approver decides an incident", approver, ActionDecideIncident, nil, true},
		{"an agent does not decide an incident", agent, ActionDecideIncident, nil, false},
		{"the store file's holder does not decide an incident", local, ActionDecideIncident, nil, false},
		{"an approver raises a limit", approver, ActionRaise, nil, true},
		{"an agent does not raise a limit", agent, ActionRaise, nil, false},
		{"a tool never raises a limit, whatever its role", tool, ActionRaise, nil, false},
		{"the store file's holder does not raise a limit", local, ActionRaise, nil, false},
		{"an approver makes an operation more urgent", approver, ActionPrioritize, theirs, true},
		{"an agent does not, even its own", agent, ActionPrioritize, mine, false},
		{"a tool never does, whatever its role", tool, ActionPrioritize, nil, false},
		{"the store file's holder does not by a flag", local, ActionPrioritize, nil, false},
		{"an approver reads the quotas", approver, ActionQuotas, nil, true},
		{"an agent does not", agent, ActionQuotas, nil, false},
		{"the store file's holder does", local, ActionQuotas, nil, true},
		{"an admin reads the audit chain", admin, ActionAudit, nil, true},
		{"an approver does not", approver, ActionAudit, nil, false},
		{"the store file's holder does", local, ActionAudit, nil, true},
		{"an unknown action is refused", admin, Action("grant-everything"), nil, false},
	} {
		err := c.c.May(c.a, c.op, "")
		if (err == nil) != c.may {
			t.Errorf("%s: May(%s) = %v, want allowed %v", c.name, c.a, err, c.may)
		}
		if err != nil && KindOf(err) != Forbidden {
			t.Errorf("%s: %v is %s, want forbidden", c.name, err, KindOf(err))
		}
	}
}
