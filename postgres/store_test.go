package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/storetest"
)

// testURL is the database the tests use, from POLLWARDEN_TEST_PG, e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. Without it the
// tests skip, except in CI (CI=true), where a skipped driver would pass
// unseen: there they fail.
func testURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("POLLWARDEN_TEST_PG")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("POLLWARDEN_TEST_PG is not set and CI=true: the PostgreSQL driver must be tested in CI " +
				"(set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
		}
		t.Skip("POLLWARDEN_TEST_PG is not set; set it to a PostgreSQL URL " +
			"(e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to test the PostgreSQL driver")
	}
	return url
}

// freshSchema names a new schema and drops it (with everything in it) when
// the test ends, after the stores the test opened are closed.
func freshSchema(t testing.TB) string {
	t.Helper()
	url := testURL(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "pwtest_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

func openIn(t testing.TB, schema string, opts postgres.Options) *postgres.Store {
	t.Helper()
	opts.Schema = schema
	s, err := postgres.Open(context.Background(), testURL(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func openFresh(t *testing.T, opts postgres.Options) *postgres.Store {
	t.Helper()
	return openIn(t, freshSchema(t), opts)
}

// TestConformance runs the common suite, which moves time by hand through
// the callers' Now, on a store that decides leases with it as SQLite does;
// TestConformanceStoreClock holds the real driver, on the database's
// clock, to its own cases.
func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) pollwarden.Store { return openFresh(t, postgres.CallerClock(postgres.Options{})) })
}

func TestConformanceKeys(t *testing.T) {
	testURL(t)
	storetest.RunKeys(t, func(t *testing.T) (pollwarden.Store, func() pollwarden.Store) {
		schema := freshSchema(t)
		open := func() pollwarden.Store { return openIn(t, schema, postgres.CallerClock(postgres.Options{})) }
		return open(), open
	})
}

func TestConformanceSealed(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) pollwarden.Store {
		return openFresh(t, postgres.CallerClock(postgres.Options{Sealer: storetest.SealKey(t, 1)}))
	})
}

func TestConformanceStoreClock(t *testing.T) {
	testURL(t)
	storetest.RunStoreClock(t, func(t *testing.T) pollwarden.Store { return openFresh(t, postgres.Options{}) })
}
