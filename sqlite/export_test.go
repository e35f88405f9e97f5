package sqlite

import (
	"context"
	"database/sql"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

// AppendBulk appends events to an existing operation through the store's
// own append path (sealing, numbering, hashing), many per transaction: a
// test helper to build large stores quickly.
func AppendBulk(ctx context.Context, s *Store, opID string, events []pollwarden.Event) error {
	evs, err := storerow.PrepareEvents(s.sealer, opID, events)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var cs storerow.Chain
		err := tx.QueryRowContext(ctx, "SELECT "+headCols+", "+seqCol+" FROM operations WHERE id = ?", opID).Scan(&cs.Pos, &cs.Hash, &cs.Seq)
		if err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, opID, cs, evs)
	})
}
