package sqlite

import (
	"context"
	"database/sql"

	"github.com/pollwarden/pollwarden"
)

// AppendBulk appends events to an existing operation, many per
// transaction: a test helper to build large stores quickly.
func AppendBulk(ctx context.Context, s *Store, opID string, events []pollwarden.Event) error {
	return s.Store.AppendBulk(ctx, opID, events)
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
