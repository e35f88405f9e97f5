package sqlstore

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one numbered schema step, NNN_name.sql: applied in order
// and each exactly once; a released file is never edited, only followed
// by a new one.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the steps from the *.sql files in dir of fsys and
// checks that they are numbered 1, 2, 3... without a gap.
func Migrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q: name must be NNN_name.sql", base)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(base, ".sql"), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %q: expected number %d", m.Name, i+1)
		}
	}
	return out, nil
}

// Schema is what a driver brings to the migrations runner: its Dialect,
// whose Write is the one transaction that migrates, and the steps around
// the migrations.
type Schema interface {
	Dialect
	// Adopt, first in that transaction, takes whatever keeps two
	// processes from migrating the same store at once, refuses a database
	// that is neither this store nor new, and marks a new one as
	// pollwarden's.
	Adopt(ctx context.Context, tx Querier) error
	// ExecScript runs one migration file, which holds several statements.
	ExecScript(ctx context.Context, tx Querier, script string) error
	// Finish, last in the transaction, refuses a schema the steps did not
	// bring up to date.
	Finish(ctx context.Context, tx Querier) error
}

const appliedSQL = "SELECT coalesce(max(version), 0) FROM pollwarden_migrations"

// newer is the refusal of a store migrated by a later pollwarden.
func newer(applied, known int) error {
	return fmt.Errorf("the store's schema version %d is newer than this pollwarden knows (%d); upgrade pollwarden", applied, known)
}

// Migrate applies the steps in dir of fsys (see Migrations) that the store
// lacks, in one transaction, so that processes opening a new store
// together apply each step once: the others wait, then find nothing left
// to do.
func Migrate(ctx context.Context, sc Schema, fsys fs.FS, dir string) error {
	all, err := Migrations(fsys, dir)
	if err != nil {
		return err
	}
	return sc.Write(ctx, func(tx Querier) error {
		if err := sc.Adopt(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sc.Syntax().MigrationsTable); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		var applied int
		if err := tx.QueryRow(ctx, appliedSQL).Scan(&applied); err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
		if applied > len(all) {
			return newer(applied, len(all))
		}
		for _, m := range all[applied:] {
			if err := sc.ExecScript(ctx, tx, m.SQL); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.Name, err)
			}
			_, err := tx.Exec(ctx, "INSERT INTO pollwarden_migrations (version, name, applied_at) VALUES (?, ?, ?)", m.Version, m.Name, FormatTime(time.Now()))
			if err != nil {
				return fmt.Errorf("record migration %s: %w", m.Name, err)
			}
		}
		return sc.Finish(ctx, tx)
	})
}

// CheckSchema is Migrate for a read-only open: it only reads, and accepts
// only a store whose schema has exactly the steps in dir of fsys
// (ErrSchemaBehind when it has fewer).
func CheckSchema(ctx context.Context, q Querier, fsys fs.FS, dir string) error {
	all, err := Migrations(fsys, dir)
	if err != nil {
		return err
	}
	var applied int
	if err := q.QueryRow(ctx, appliedSQL).Scan(&applied); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	switch {
	case applied < len(all):
		return fmt.Errorf("%w: version %d, this pollwarden's is %d; a command that only reads never migrates, so run one that writes (wait, serve) once", ErrSchemaBehind, applied, len(all))
	case applied > len(all):
		return newer(applied, len(all))
	}
	return nil
}
