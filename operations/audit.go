package operations

import (
	"context"

	"github.com/pollwarden/pollwarden/audit"
)

// auditPage is how many events a verification reads per query.
const auditPage = 2000

// AuditHead is the position and hash of the last event of the store's
// hash chain (0 and "" for an empty store), to write down and compare
// later. It does not verify the chain.
func (s *Reader) AuditHead(ctx context.Context, c Caller) (pos int64, hash string, err error) {
	if err := c.May(ActionAudit, nil, ""); err != nil {
		return 0, "", err
	}
	return s.store.AuditHead(ctx)
}

// VerifyAudit walks the whole chain through v, which may carry a head and
// checkpoints to hold it to; a broken chain is an *audit.ChainError, and
// v then tells how far it got.
func (s *Reader) VerifyAudit(ctx context.Context, c Caller, v *audit.Verifier) error {
	if err := c.May(ActionAudit, nil, ""); err != nil {
		return err
	}
	return v.Walk(ctx, s.store, auditPage)
}
