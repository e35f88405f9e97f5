package sqlite

import (
	"context"
	"database/sql"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/storetest"
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

// NoLinger returns o for a store whose groups never wait for more
// writes: for tests that queue writes behind HoldWrites and count them.
func NoLinger(o Options) Options {
	o.noLinger = true
	return o
}

// PendingWrites is how many writes wait for the writer slot: those
// queued in the driver and the claims and saves the shared store holds for
// its next group.
func PendingWrites(s *Store) int {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	return len(s.group) + s.Store.PendingGrouped()
}

// Write runs fn through the store's write path (grouped like every write).
func Write(ctx context.Context, s *Store, fn func(*sql.Tx) error) error { return s.write(ctx, fn) }

// MigratedTo returns o with only the first v migration steps, for the
// migration cases of the conformance suite.
func MigratedTo(t testing.TB, o Options, v int) Options {
	o.migrations = storetest.FirstSteps(t, migrationFiles, "migration", v)
	return o
}

// ExecRaw runs one statement through the store's write path, whatever its
// schema version.
func ExecRaw(ctx context.Context, s *Store, query string, args ...any) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// DriverName is the database/sql driver the store opens files with, for
// tests that open a file beside it.
const DriverName = driverName

// ErrorCode is the SQLite result code of a driver error.
var ErrorCode = errorCode
