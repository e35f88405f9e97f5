package operations

import "github.com/pollwarden/pollwarden"

// Action is what a caller asks to do; Caller.May is the one table of who
// may do which, asked by every use case and by a door that must answer
// before it reads a request (the API's 403 before a body is parsed) or
// draws one (the console's buttons).
type Action string

// The actions of the table.
const (
	// ActionCreate creates or resumes an operation.
	ActionCreate Action = "create"
	// ActionRead reads operations: get, list, their story, a result, a wait.
	ActionRead Action = "read"
	// ActionRequestExtension asks an approver for more time or requests;
	// it grants nothing.
	ActionRequestExtension Action = "request-extension"
	// ActionDecide chooses one of an escalation's options.
	ActionDecide Action = "decide"
	// ActionCancel runs the contract's cancel call at the provider.
	ActionCancel Action = "cancel"
	// ActionAbandon stops watching an operation; nothing is sent.
	ActionAbandon Action = "abandon"
	// ActionRaise creates an operation with limits above its contract's.
	ActionRaise Action = "raise"
	// ActionAudit reads the store's hash chain head and verifies it.
	ActionAudit Action = "audit"
	// ActionPrioritize gives an operation a more urgent priority than the
	// default (at create) or than it had: a larger share of a quota that
	// other operations wait on.
	ActionPrioritize Action = "prioritize"
	// ActionQuotas reads the shared quotas: every key, what was taken of
	// it and which operations, of every owner, wait on it.
	ActionQuotas Action = "quotas"
	// ActionIncidents reads the provider incidents; ActionDecideIncident
	// answers one, for every operation it holds.
	ActionIncidents      Action = "incidents"
	ActionDecideIncident Action = "decide-incident"
)

// May reports whether c may do a to op, choosing option (ActionDecide
// only; "" asks about deciding at all). op may be nil when the door asks
// before anything is read: the answer is then the role's part alone, and
// the use case asks again with the record. Whether c sees op at all is
// the reads' rule (not found), never this one's. An option's
// GrantsAuthority stays data on the option, checked once more by
// policy.Apply for whoever drives the controller directly.
func (c Caller) May(a Action, op *pollwarden.Operation, option string) error {
	approver := c.Role.CanGrant()
	switch a {
	case ActionCreate, ActionRead, ActionRequestExtension:
		return nil
	case ActionDecide:
		if approver {
			return nil
		}
		return refuse(Forbidden, "", "%s has the %s role: only an approver decides", c.Name, c.Role)
	case ActionCancel:
		if approver {
			return nil
		}
		return refuse(Forbidden, "", "%s has the %s role: only an approver cancels at the provider", c.Name, c.Role)
	case ActionAbandon:
		// Abandoning narrows authority: an agent may stop its own
		// operations; one that sees every operation (scope all) still
		// stops only its own.
		if c.Local || approver || op == nil || op.Owner == c.Name {
			return nil
		}
		return refuse(Forbidden, "", "operation %s belongs to %s; an agent may abandon only its own operations", op.ID, op.Owner)
	case ActionRaise:
		// Only an approver, through a door that grants authority: never a
		// tool (R20), never the store file's holder by the way of a flag.
		if !c.Local && !c.Tool && approver {
			return nil
		}
		return refuse(Forbidden, "", "only an approver may raise a contract's limits")
	case ActionPrioritize:
		// More urgent means less for every other operation under the same
		// quota: an approver's call, never a tool's; anyone may lower.
		switch {
		case !c.Tool && approver:
			return nil
		case c.Tool:
			return refuse(Forbidden, "priority", "a tool never makes an operation more urgent than priority %d: only an approver may, through the API; a tool may only lower it (a larger number)", DefaultPriority)
		}
		return refuse(Forbidden, "priority", "%s has the %s role: only an approver may make an operation more urgent than priority %d; an agent may only lower it (a larger number)", c.Name, c.Role, DefaultPriority)
	case ActionQuotas:
		// The waiting operations of every owner: an approver's view, or
		// the store file's holder, who could read them all anyway.
		if c.Local || approver {
			return nil
		}
		return refuse(Forbidden, "", "%s has the %s role: the shared quotas and who waits on them are for approvers", c.Name, c.Role)
	case ActionIncidents, ActionDecideIncident:
		// An incident spans every operation under a credential, whoever
		// owns them: an approver's view (and the store file's holder's,
		// who could read it whole) and an approver's decision.
		if approver || (a == ActionIncidents && c.Local) {
			return nil
		}
		return refuse(Forbidden, "", "%s has the %s role: provider incidents are for approvers", c.Name, c.Role)
	case ActionAudit:
		if c.Local || c.Role == pollwarden.RoleAdmin {
			return nil
		}
		return refuse(Forbidden, "", "the audit chain's head and its verification are for admins")
	}
	return refuse(Forbidden, "", "%s is not an action of pollwarden", a)
}
