package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ProbeWrite commits one transaction that changes no row, for a readiness
// check: it takes a transaction id (so its commit is written to the
// database's WAL and flushed) and runs an UPDATE of the store's own table
// that matches nothing (so a read-only server or transaction, or a
// missing privilege, refuses it). Nothing grows and the audit chain is
// untouched.
func (s *Store) ProbeWrite(ctx context.Context) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT txid_current()"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE pollwarden_migrations SET name = name WHERE false")
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: schema %s: write probe: %w", s.schema, err)
	}
	return nil
}
