package sqlite

import (
	"context"
	"database/sql"

	"github.com/pollwarden/pollwarden"
)

// AppendBulk appends events to an existing operation through the store's
// own append path (sealing, numbering, hashing), many per transaction: a
// test helper to build large stores quickly.
func AppendBulk(ctx context.Context, s *Store, opID string, events []pollwarden.Event) error {
	evs, err := s.prepareEvents(opID, events)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var cs chainState
		err := tx.QueryRowContext(ctx, "SELECT "+headCols+", "+seqCol+" FROM operations WHERE id = ?", opID).Scan(&cs.pos, &cs.hash, &cs.seq)
		if err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, opID, cs, evs)
	})
}
