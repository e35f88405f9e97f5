// Package postgres is the fleet pollwarden.Store: one PostgreSQL database
// shared by any number of pollwarden processes on any number of machines
// (pgx/v5 with a connection pool).
//
// Every write is one transaction. Version and lease checks lock the
// operation's row (SELECT ... FOR UPDATE) before reading it, so no other
// writer can invalidate them before the commit; a write that carries events
// then locks the one-row audit_head table, which serialises event appends
// across the whole fleet and keeps the store-wide chain gap-free (see
// docs/audit.md, "Several writers"). Lock order is always operation row,
// then chain head, so writers cannot deadlock.
//
// The database's clock (clock_timestamp()) alone decides whether a lease
// is held, when it expires and whether a fenced write may still commit;
// the callers' Now fields are ignored for leases, so replicas whose clocks
// disagree still agree on who owns an operation.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/storerow"
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
}

// ErrNoStore and ErrSchemaBehind are a read-only open's refusals (see
// Options.ReadOnly); the same values as sqlite's.
var (
	ErrNoStore      = storerow.ErrNoStore
	ErrSchemaBehind = storerow.ErrSchemaBehind
)

// Store implements pollwarden.Store over a PostgreSQL database.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	sealer audit.Sealer
	// callerClock: see Options.callerClock.
	callerClock bool
	// mode caches the store's sealing key id ("" = plain) once read; it
	// never changes after the first append writes it.
	modeMu    sync.Mutex
	mode      string
	modeKnown bool
	closeOnce sync.Once
}

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
	s := &Store{pool: pool, schema: schema, sealer: opts.Sealer, callerClock: opts.callerClock}
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

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migration/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q: name must be NNN_name.sql", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %q: expected number %d", m.name, i+1)
		}
	}
	return out, nil
}

// migrate creates the schema and applies the missing migrations in one
// transaction holding an advisory lock named after the schema, so replicas
// starting together apply each step once: the others wait for the lock,
// then find nothing left to do. DDL is transactional in PostgreSQL, so a
// failed step leaves the schema as it was.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "pollwarden migrate "+s.schema); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS pollwarden_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`)
		if err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		var applied int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM pollwarden_migrations").Scan(&applied); err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
		if applied > len(all) {
			return fmt.Errorf("the store's schema version %d is newer than this pollwarden knows (%d); upgrade pollwarden", applied, len(all))
		}
		for _, m := range all[applied:] {
			// Simple protocol: a migration is several statements.
			if _, err := tx.Exec(ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO pollwarden_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

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
	all, err := migrations()
	if err != nil {
		return err
	}
	var applied int
	if err := s.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM pollwarden_migrations").Scan(&applied); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	switch {
	case applied < len(all):
		return fmt.Errorf("%w: version %d, this pollwarden's is %d; a command that only reads never migrates, so run one that writes (wait, serve) once", ErrSchemaBehind, applied, len(all))
	case applied > len(all):
		return fmt.Errorf("the store's schema version %d is newer than this pollwarden knows (%d); upgrade pollwarden", applied, len(all))
	}
	return nil
}

// errNoRows reports pgx's "no rows" in a form callers of this package test.
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
