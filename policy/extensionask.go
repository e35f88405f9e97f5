package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/internal/present"
)

// extensionGrant is what one extend decision adds to op under c: the contract's
// fixed amounts, or, where an agent asked for an extension since the last
// one was granted, the amounts it asked for within the contract's bounds
// (an amount it left at zero stays the contract's). The option offers it
// and the decision applies it, both from the same record, so what an
// approver reads is what is granted.
type extensionGrant struct {
	Time     time.Duration
	Requests int
	// Asked is the pending request the grant follows; nil for the fixed
	// amounts.
	Asked *pollwarden.ExtensionAsk
	// Capped is true when the request asked for more than the bounds.
	Capped bool
}

func grantFor(op *pollwarden.Operation, c *pollwarden.ContractSpec) extensionGrant {
	e := c.Escalation
	g := extensionGrant{Time: e.ExtensionTime, Requests: e.ExtensionRequests}
	a := op.ExtensionAsked
	if a == nil {
		return g
	}
	g.Asked = a
	maxT, maxN := e.ExtensionBounds()
	if a.ExtraTime > 0 {
		g.Time = min(a.ExtraTime, maxT)
		g.Capped = a.ExtraTime > maxT
	}
	if a.ExtraStatusRequests > 0 {
		g.Requests = min(a.ExtraStatusRequests, maxN)
		g.Capped = g.Capped || a.ExtraStatusRequests > maxN
	}
	return g
}

// askedWords says, in an extend option's label, whose request it follows
// and, when the request went past the contract's bounds, what they are.
func (g extensionGrant) askedWords(c *pollwarden.ContractSpec) string {
	if g.Asked == nil {
		return ""
	}
	s := fmt.Sprintf("; %s asked for %s and %d more status requests", display.Value(g.Asked.By),
		pollwarden.ShortDuration(g.Asked.ExtraTime), g.Asked.ExtraStatusRequests)
	if g.Capped {
		maxT, maxN := c.Escalation.ExtensionBounds()
		s += fmt.Sprintf(", more than the contract's escalation allows (at most %s and %d requests per extension)", pollwarden.ShortDuration(maxT), maxN)
	}
	return s
}

// extendOption is the extend option for op escalated with reason r: its
// cost, the limits it sets and, in its label, how long its requests last
// and whose request it follows.
func extendOption(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, now time.Time) pollwarden.Option {
	g := grantFor(op, c)
	dl := extendedDeadline(op, g.Time, now)
	// The budget saturates at pollwarden.MaxCount: the option says what
	// it would really add, as Apply does it.
	newMax := pollwarden.AddCount(op.MaxStatusRequests, g.Requests)
	more := max(newMax-op.MaxStatusRequests, 0)
	return pollwarden.Option{
		ID:                   pollwarden.OptionExtend,
		Label:                present.ExtendLabel(g.Time, more, dl, newMax, extensionEffect(op, c, more)+g.askedWords(c), r),
		ExtraTime:            pollwarden.ShortDuration(g.Time),
		ExtraStatusRequests:  more,
		NewDeadline:          &dl,
		NewMaxStatusRequests: newMax,
		GrantsAuthority:      true,
	}
}

// reofferExtension rewrites the extend option of op's current escalation
// (and its line in the escalation's message) after an agent asked for an
// extension while op awaited a decision, so the approver is offered what
// was asked. The escalation keeps its id: the question is the same, and
// the decision applies the record's pending request whichever form
// posted it.
func reofferExtension(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) {
	if c == nil || op.Phase != pollwarden.PhaseEscalated || op.Escalation == nil || op.Escalation.Decided != nil {
		return
	}
	for i, o := range op.Escalation.Options {
		if o.ID != pollwarden.OptionExtend {
			continue
		}
		n := extendOption(op, c, op.Reason, now)
		op.Escalation.Options[i] = n
		op.Escalation.Message = strings.Replace(op.Escalation.Message,
			"["+o.ID+"] "+display.Text(o.Label), "["+n.ID+"] "+display.Text(n.Label), 1)
		return
	}
}
