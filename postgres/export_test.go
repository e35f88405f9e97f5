package postgres

import (
	"context"
	"testing"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
	"github.com/pollwarden/pollwarden/storetest"
)

// CallerClock returns o with lease decisions on the caller's Now, for the
// conformance suite, which moves time by hand; only tests can set it.
func CallerClock(o Options) Options {
	o.callerClock = true
	return o
}

// MigratedTo returns o with only the first v migration steps, for the
// migration cases of the conformance suite.
func MigratedTo(t testing.TB, o Options, v int) Options {
	o.migrations = storetest.FirstSteps(t, migrationFiles, "migration", v)
	return o
}

// ExecRaw runs one statement ("?" placeholders) in a transaction of its
// own, whatever the schema version.
func ExecRaw(ctx context.Context, s *Store, query string, args ...any) error {
	return dialect{s}.Write(ctx, func(tx sqlstore.Querier) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
}

// Write runs fn in one write transaction of s, as the shared store does.
func Write(ctx context.Context, s *Store, fn func(sqlstore.Querier) error) error {
	return dialect{s}.Write(ctx, fn)
}
