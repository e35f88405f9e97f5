// Package postgres is the fleet pollwarden.Store: one PostgreSQL database
// shared by any number of pollwarden processes on any number of machines
// (pgx/v5 with a connection pool).
//
// Every write is one transaction. Version and lease checks lock the
// operation's row (SELECT ... FOR UPDATE) before reading it, so no other
// writer can invalidate them before the commit; a write that carries events
// then locks the one-row audit_head table, which serialises event appends
// across the whole fleet and keeps the store-wide chain gap-free (see
// docs/audit.md, "Several writers"). Lock order is always operation rows,
// then chain head, so writers cannot deadlock. Because that head is the
// fleet's bottleneck, the claims and saves of one process that arrive
// together share one transaction, and the head is locked once for them.
//
// The database's clock (clock_timestamp()) alone decides whether a lease
// is held, when it expires and whether a fenced write may still commit;
// the callers' Now fields are ignored for leases, so replicas whose clocks
// disagree still agree on who owns an operation.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// DefaultSchema is where Open keeps the store's tables when Options.Schema
// is empty.
const DefaultSchema = "pollwarden"

// Options tune Open. The zero value is the default.
type Options struct {
	// Schema holds every object of the store (default DefaultSchema). It is
	// created when missing. Several stores may share a database in
	// different schemas (tests use one schema each). A lower-case SQL
	// identifier: letters, digits and underscores.
	Schema string
	// Sealer, when set, seals (encrypts) event payloads before they are
	// appended and opens them in EventList, as in the SQLite driver: the
	// first append fixes a store as plain or sealed with one key; appends
	// with a missing or another key then fail with ErrSealing.
	Sealer audit.Sealer
	// MaxConns caps the connection pool (default: pgxpool's, or the URL's
	// pool_max_conns).
	MaxConns int32
	// callerClock makes lease decisions use the caller's Now, as the
	// SQLite driver does. Only the conformance suite sets it (through
	// export_test.go), to move time by hand; no program can.
	callerClock bool
	// ReadOnly opens an existing store for reading only, for commands that
	// only read: the schema is neither created nor migrated, and every
	// connection runs read-only transactions. A schema without
	// pollwarden's tables fails with ErrNoStore, one older than this
	// pollwarden's with ErrSchemaBehind.
	ReadOnly bool
	// migrations replaces the embedded migration files (a "migration"
	// directory of NNN_name.sql): only the conformance suite sets it,
	// through export_test.go, to make stores of an older schema.
	migrations fs.FS
}

// ErrNoStore and ErrSchemaBehind are a read-only open's refusals (see
// Options.ReadOnly); the same values as sqlite's.
var (
	ErrNoStore      = sqlstore.ErrNoStore
	ErrSchemaBehind = sqlstore.ErrSchemaBehind
)

// Store implements pollwarden.Store and pollwarden.Outbox over a
// PostgreSQL database: the shared SQL store (sqlstore) over PostgreSQL's
// dialect.
type Store struct {
	*sqlstore.Store
	pool   *pgxpool.Pool
	schema string
	// callerClock: see Options.callerClock.
	callerClock bool
	binds       *binds
	// migrations are the schema steps (see Options.migrations).
	migrations fs.FS
	closeOnce  sync.Once
}

// ErrSealing: the store's sealing and the key given to Open disagree, so
// events cannot be appended (see CheckSealing); the same value as sqlite's.
var ErrSealing = sqlstore.ErrSealing

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at url (a postgres:// URL or a libpq
// key=value string), creates the schema when missing and applies the
// missing migrations. Several processes may open the same store at once:
// migrations run under a transaction-level advisory lock.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("postgres: open: schema %q: want a lower-case identifier (letters, digits, _)", schema)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	// Every connection resolves unqualified names in the store's schema
	// only (pg_catalog is always searched first for built-ins).
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	if opts.ReadOnly {
		// A write slipped into a read-only command fails instead of
		// changing the store.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{pool: pool, schema: schema, callerClock: opts.callerClock, binds: &binds{}, migrations: opts.migrations}
	if s.migrations == nil {
		s.migrations = migrationFiles
	}
	s.Store = sqlstore.New(dialect{s}, opts.Sealer)
	prepare := s.migrate
	if opts.ReadOnly {
		prepare = s.checkSchema
	}
	if err := prepare(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open schema %s: %w", schema, err)
	}
	return s, nil
}

// Schema is the schema that holds the store.
func (s *Store) Schema() string { return s.schema }

// Close closes the pool; calling it again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// migrationFiles are the numbered schema steps, NNN_name.sql, applied in
// order and each exactly once; a released file is never edited, only
// followed by a new one.
//
//go:embed migration/*.sql
var migrationFiles embed.FS

// migrate creates the schema and applies the missing migrations in one
// transaction holding an advisory lock named after the schema, so replicas
// starting together apply each step once: the others wait for the lock,
// then find nothing left to do. DDL is transactional in PostgreSQL, so a
// failed step leaves the schema as it was.
func (s *Store) migrate(ctx context.Context) error {
	return sqlstore.Migrate(ctx, schema{dialect{s}}, s.migrations, "migration")
}

// schema is PostgreSQL's side of the migrations runner.
type schema struct{ dialect }

// Adopt takes the migration lock and creates the schema when missing.
func (sc schema) Adopt(ctx context.Context, tx sqlstore.Querier) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", "pollwarden migrate "+sc.s.schema); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{sc.s.schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

// ExecScript runs the file with the simple protocol: it holds several
// statements.
func (schema) ExecScript(ctx context.Context, tx sqlstore.Querier, script string) error {
	_, err := tx.(querier).c.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol)
	return err
}

func (schema) Finish(context.Context, sqlstore.Querier) error { return nil }

// checkSchema is migrate for a read-only open: it only reads, and accepts
// only a schema holding this pollwarden's store.
func (s *Store) checkSchema(ctx context.Context) error {
	var tables int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'pollwarden_migrations'`, s.schema).Scan(&tables)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if tables == 0 {
		return fmt.Errorf("%w: the schema has no pollwarden tables (a command that only reads never creates them)", ErrNoStore)
	}
	return sqlstore.CheckSchema(ctx, dialect{s}.Reader(), s.migrations, "migration")
}

// write runs fn in one transaction and commits it.
func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}
