package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// migrationFiles are the numbered schema steps, NNN_name.sql, applied in
// order and each exactly once; a released file is never edited, only
// followed by a new one.
//
//go:embed migration/*.sql
var migrationFiles embed.FS

// identity is what a file says about its owner.
type identity struct {
	appID   int64
	objects int // schema objects that SQLite did not create itself
}

func readIdentity(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (identity, error) {
	// One statement, so both facts come from one snapshot: read apart, a
	// migration committed by another process in between would show a file
	// with tables but no application id, which looks foreign.
	var id identity
	err := q.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id()),
		(SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\')`).Scan(&id.appID, &id.objects)
	if err != nil {
		return id, fmt.Errorf("read application_id and schema: %w", err)
	}
	return id, nil
}

// check refuses a file that is neither ours nor a brand-new database.
func (id identity) check() error {
	switch {
	case id.appID == ApplicationID:
		return nil
	case id.appID != 0:
		return fmt.Errorf("%w: application_id is 0x%08x, pollwarden's is 0x%08x", ErrNotStore, id.appID, ApplicationID)
	case id.objects > 0:
		return fmt.Errorf("%w: the database has %d tables or indexes but no pollwarden schema", ErrNotStore, id.objects)
	}
	return nil
}

// init validates the file, switches it to WAL and brings the schema up to
// date. Only reads happen until the file is known to be ours or empty.
func (s *Store) init(ctx context.Context) error {
	id, err := readIdentity(ctx, s.db)
	if err != nil {
		return err
	}
	if err := id.check(); err != nil {
		return err
	}
	// WAL lets readers proceed during a write and makes commits cheap; it is
	// a property of the file, so setting it once would do, but it is cheap
	// to confirm on every open.
	err = s.retryBusy(ctx, func() error {
		var mode string
		if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("journal_mode is %q, WAL is unavailable on this filesystem", mode)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set WAL journal: %w", err)
	}
	return s.migrate(ctx)
}

// checkSchema is init for a read-only open: it only reads, and accepts
// only a pollwarden store whose schema is this pollwarden's.
func (s *Store) checkSchema(ctx context.Context) error {
	id, err := readIdentity(ctx, s.db)
	if err != nil {
		return err
	}
	if err := id.check(); err != nil {
		return err
	}
	if id.appID != ApplicationID {
		return fmt.Errorf("%w: the SQLite database holds no pollwarden schema (a command that only reads never creates one)", ErrNoStore)
	}
	return sqlstore.CheckSchema(ctx, dialect{s}.Reader(), s.migrations, "migration")
}

// migrate applies the missing migrations in one IMMEDIATE transaction, so
// two processes creating the same new file at once apply each step once:
// the second waits for the lock, then finds nothing left to do.
func (s *Store) migrate(ctx context.Context) error {
	return sqlstore.Migrate(ctx, schema{dialect{s}}, s.migrations, "migration")
}

// schema is SQLite's side of the migrations runner.
type schema struct{ dialect }

// Adopt checks the file again, under the write lock, and marks a new one
// with pollwarden's application id.
func (sc schema) Adopt(ctx context.Context, q sqlstore.Querier) error {
	tx := q.(querier).tx
	id, err := readIdentity(ctx, tx)
	if err != nil {
		return err
	}
	if err := id.check(); err != nil {
		return err
	}
	if id.appID == 0 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return fmt.Errorf("set application_id: %w", err)
		}
	}
	return nil
}

// ExecScript runs the file unprepared: it holds several statements.
func (schema) ExecScript(ctx context.Context, q sqlstore.Querier, script string) error {
	_, err := q.(querier).tx.ExecContext(ctx, script)
	return err
}

// Finish refuses a store made before the release, which kept one audit
// chain per operation, in an events table without positions; 001 was
// rewritten for the store-wide chain before anything shipped.
func (schema) Finish(ctx context.Context, q sqlstore.Querier) error {
	var hasPos int
	err := q.QueryRow(ctx, "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'pos'").Scan(&hasPos)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if hasPos == 0 {
		return errors.New("this store was made by a pre-release pollwarden (per-operation audit chains) and cannot be used; move it aside and start a new one")
	}
	return nil
}
