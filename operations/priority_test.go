package operations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// TestPriorityOnlyAnApproverRaises: a priority is 1 to 9; an agent (or a
// tool, whatever its role, or the CLI) may give 5 or a larger number and
// is refused (Forbidden) one more urgent than 5; an approver through the
// API may give any. Out of range is invalid, naming the field as the
// door spells it, and nothing is written on a refusal.
func TestPriorityOnlyAnApproverRaises(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	approver := token("alice", pollwarden.RoleApprover, "")
	tool := approver
	tool.Tool = true
	local := operations.Caller{Caller: agent.Caller, Local: true, Owner: "cli:me"}
	for i, c := range []struct {
		name   string
		caller operations.Caller
		prio   int
		kind   operations.Kind
		want   int
	}{
		{"an agent lowers its own", agent, 9, "", 9},
		{"an agent gives the default", agent, 5, "", 5},
		{"an agent may not raise", agent, 4, operations.Forbidden, 0},
		{"a tool may not raise, whatever its role", tool, 1, operations.Forbidden, 0},
		{"the CLI may not raise by a flag", local, 2, operations.Forbidden, 0},
		{"an approver raises", approver, 1, "", 1},
		{"zero is out of range", approver, 0, operations.Invalid, 0},
		{"ten is out of range", agent, 10, operations.Invalid, 0},
		{"a negative one is out of range", agent, -3, operations.Invalid, 0},
	} {
		id := "prio-" + string(rune('a'+i))
		p := operations.CreateParams{Caller: c.caller, Names: map[string]string{"priority": "--priority"},
			CreateRequest: operations.CreateRequest{OperationID: id, Contract: "export", JobID: id, Priority: intp(c.prio)}}
		op, _, err := w.ops.Create(ctx, p)
		if operations.KindOf(err) != c.kind {
			t.Errorf("%s: %v (kind %q), want kind %q", c.name, err, operations.KindOf(err), c.kind)
			continue
		}
		if c.kind != "" {
			if !strings.Contains(err.Error(), "priority") {
				t.Errorf("%s: %q does not name the priority", c.name, err)
			}
			if c.kind == operations.Invalid && !strings.Contains(err.Error(), "--priority must be from 1 (most urgent) to 9") {
				t.Errorf("%s: %q does not say the range in the door's words", c.name, err)
			}
			if _, gerr := w.store.OperationGet(ctx, id); gerr == nil {
				t.Errorf("%s: refused, yet %s was stored", c.name, id)
			}
			continue
		}
		if got := priorityOf(op); got != c.want {
			t.Errorf("%s: recorded priority %d, want %d", c.name, got, c.want)
		}
	}
}

// priorityOf is the priority op runs with (0 reads as the default).
func priorityOf(op *pollwarden.Operation) int { return op.EffectivePriority() }
