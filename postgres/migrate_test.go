package postgres_test

import (
	"testing"

	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/storetest"
)

func TestMigrationConformance(t *testing.T) {
	testURL(t)
	storetest.RunMigrations(t, storetest.MigrationHarness{
		Versions:     storetest.MigrationCount(t, "migration"),
		SelfNumbered: true,
		OpenAt: func(t *testing.T, v int) (func(string, ...any) error, func() storetest.OutboxStore) {
			schema := freshSchema(t)
			old := openIn(t, schema, postgres.MigratedTo(t, postgres.Options{}, v))
			t.Cleanup(func() { old.Close() })
			exec := func(q string, args ...any) error { return postgres.ExecRaw(t.Context(), old, q, args...) }
			return exec, func() storetest.OutboxStore { return openIn(t, schema, postgres.Options{}) }
		},
	})
}
