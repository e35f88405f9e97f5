package pollwarden

import (
	"fmt"
	"strings"
	"time"
)

// ExtensionRequest is what an agent asks for when the limits are too
// tight: more time, more status requests, and why. It grants nothing; an
// approver decides.
type ExtensionRequest struct {
	ExtraTime           time.Duration
	ExtraStatusRequests int
	Justification       string
}

// ExtensionAsk is an agent's pending request as the operation keeps it:
// the amounts asked for, by whom and when. The justification stays in the
// audit event alone.
type ExtensionAsk struct {
	ExtraTime           time.Duration `json:"extra_time"`
	ExtraStatusRequests int           `json:"extra_status_requests,omitempty"`
	By                  string        `json:"by"`
	At                  time.Time     `json:"at"`
}

// maxJustification keeps a request readable as one line of the story.
const maxJustification = 2000

// FieldProblem is one problem of a value a caller gave: the field it is
// about, as the API names it, and a message that names it too.
type FieldProblem struct {
	Field, Message string
}

// Problems lists every problem of e: either extra may be zero (an agent
// may need only more requests), not both, and a justification is
// required. The "both zero" problem is about extra_time, so a door that
// already refused the time as typed can leave it out.
func (e ExtensionRequest) Problems() []FieldProblem {
	var out []FieldProblem
	if e.ExtraTime < 0 {
		out = append(out, FieldProblem{"extra_time", fmt.Sprintf("extra_time %s must not be negative", e.ExtraTime)})
	}
	if e.ExtraStatusRequests < 0 {
		out = append(out, FieldProblem{"extra_status_requests", fmt.Sprintf("extra_status_requests must be 0 or more, got %d", e.ExtraStatusRequests)})
	}
	if e.ExtraTime == 0 && e.ExtraStatusRequests == 0 {
		out = append(out, FieldProblem{"extra_time", "extra_time and extra_status_requests are both zero: ask for some extra_time or some extra_status_requests"})
	}
	switch just := strings.TrimSpace(e.Justification); {
	case just == "":
		out = append(out, FieldProblem{"justification", "justification is required: say why, for the person who decides"})
	case len(just) > maxJustification:
		out = append(out, FieldProblem{"justification", fmt.Sprintf("justification is longer than %d bytes", maxJustification)})
	}
	return out
}

// Check is e's problems as one ErrInvalid, or nil: what the controller
// asks of every request, whichever door or embedder built it.
func (e ExtensionRequest) Check() error {
	probs := e.Problems()
	if len(probs) == 0 {
		return nil
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Message
	}
	return Refuse(ErrInvalid, "", "%s", strings.Join(msgs, "; "))
}
