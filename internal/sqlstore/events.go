package sqlstore

import (
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// prepareEvents fills in the operation id and encodes (and, with a sealer,
// seals) each payload before the transaction, so a bad event fails the call
// without touching the store and no lock is held while sealing.
func prepareEvents(sealer audit.Sealer, opID string, events []pollwarden.Event) ([]pollwarden.Event, error) {
	out := make([]pollwarden.Event, len(events))
	for i, e := range events {
		if e.OperationID == "" {
			e.OperationID = opID
		}
		if e.OperationID != opID {
			return nil, fmt.Errorf("%w: event %d names operation %q", pollwarden.ErrInvalid, i, e.OperationID)
		}
		if err := checkTime("event time", e.At); err != nil {
			return nil, fmt.Errorf("%w: event %d: %v", pollwarden.ErrInvalid, i, err)
		}
		p, err := audit.SealPayload(sealer, e)
		if err != nil {
			return nil, fmt.Errorf("%w: event %d: %v", pollwarden.ErrInvalid, i, err)
		}
		e.Payload = p
		out[i] = e
	}
	return out, nil
}

// Chain is where appended events go: after the store-wide chain's head
// (Pos, Hash) and after the operation's last Seq.
type Chain struct {
	Pos  int64
	Hash string
	Seq  int64
}

// link numbers e as the next event of the chain and of its operation and
// computes its hash (R25) over its payload's digest, which a prune keeps;
// the caller then stores it. It must run under the lock that serializes
// appends.
func (c *Chain) link(e *pollwarden.Event) {
	c.Pos++
	c.Seq++
	e.Pos, e.Seq, e.PrevHash = c.Pos, c.Seq, c.Hash
	e.PayloadDigest = audit.PayloadDigest(e.Payload)
	e.Hash = audit.Hash(*e)
	c.Hash = e.Hash
}
