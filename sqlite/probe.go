package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// ProbeWrite commits one write that changes nothing, through the same
// path as every other write (the writer slot, BEGIN IMMEDIATE, the
// commit and its fsync), for a readiness check: it fails when the store
// cannot take a write (the disk is full or read-only, another process
// holds the write lock past the busy timeout). It sets the file's
// application id to the value it has: SQLite rewrites the header page for
// that (an UPDATE of a row with its own values is skipped as unchanged),
// so one page goes to the WAL and is committed, the file does not grow and
// the audit chain is untouched.
func (s *Store) ProbeWrite(ctx context.Context) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: %s: write probe: %w", s.path, err)
	}
	return nil
}
