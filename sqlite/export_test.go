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

// HoldWrites takes the writer slot as a committing goroutine does, so a
// test can queue writes behind it; the returned function lets them go.
func HoldWrites(s *Store) (release func()) {
	s.wslot <- struct{}{}
	return func() { <-s.wslot }
}

// PendingWrites is how many writes wait for the writer slot.
func PendingWrites(s *Store) int {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	return len(s.group)
}

// Write runs fn through the store's write path (grouped like every write).
func Write(ctx context.Context, s *Store, fn func(*sql.Tx) error) error { return s.write(ctx, fn) }
