package policy

import (
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// StateCategory names the list of the contract's state table that s falls
// in (pending, success, failure, cancelled, expired), or "unknown": what
// `contract test` shows next to a state, from the table Decide reads.
func StateCategory(c *pollwarden.ContractSpec, s string) string {
	switch classOf(c, s) {
	case classPending:
		if !listed(c, s) {
			return "pending (unlisted, as the contract allows)"
		}
		return "pending"
	case classSuccess:
		return "success"
	case classFailure:
		return "failure"
	case classCancelled:
		return "cancelled"
	case classExpired:
		return "expired"
	}
	return "unknown"
}

func listed(c *pollwarden.ContractSpec, s string) bool {
	for _, l := range [][]string{c.State.Pending, c.State.Success, c.State.Failure, c.State.Cancelled, c.State.Expired} {
		for _, v := range l {
			if v == s {
				return true
			}
		}
	}
	return false
}

// FieldCheck is one required result field as the success check sees it.
type FieldCheck struct {
	Path    string `json:"path"`
	Kind    string `json:"kind,omitempty"`
	Value   any    `json:"value,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// CheckFields runs the success check on every required field, not only
// up to the first problem, so a user sees all of them at once.
func CheckFields(req []pollwarden.Field, fields map[string]any) []FieldCheck {
	out := make([]FieldCheck, 0, len(req))
	for _, f := range req {
		fc := FieldCheck{Path: f.Key(), Kind: string(f.Kind)}
		v, ok := fields[f.Key()]
		switch {
		case !ok || v == nil:
			fc.Problem = "missing"
		default:
			fc.Value = v
			fc.Problem = checkKind(f.Kind, v)
		}
		out = append(out, fc)
	}
	return out
}

// String is the check as one line.
func (f FieldCheck) String() string {
	kind := ""
	if f.Kind != "" {
		kind = " (" + f.Kind + ")"
	}
	if f.Problem != "" {
		return fmt.Sprintf("%s%s: %s", f.Path, kind, f.Problem)
	}
	return fmt.Sprintf("%s%s: ok %v", f.Path, kind, f.Value)
}
