package operations

import "github.com/pollwarden/pollwarden"

// Outcome is op as c reads it: the status URL whole only when c is the
// agent that gave it (pollwarden.OutcomeFor).
func (c Caller) Outcome(op *pollwarden.Operation) pollwarden.Outcome {
	return pollwarden.OutcomeFor(op, c.owner())
}
