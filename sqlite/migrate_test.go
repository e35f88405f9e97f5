package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

func TestMigrationConformance(t *testing.T) {
	storetest.RunMigrations(t, storetest.MigrationHarness{
		Versions: storetest.MigrationCount(t, "migration"),
		OpenAt: func(t *testing.T, v int) (func(string, ...any) error, func() storetest.OutboxStore) {
			path := filepath.Join(t.TempDir(), "pollwarden.db")
			old, err := sqlite.Open(t.Context(), path, sqlite.MigratedTo(t, sqlite.Options{}, v))
			if err != nil {
				t.Fatalf("open at schema version %d: %v", v, err)
			}
			t.Cleanup(func() { old.Close() })
			exec := func(q string, args ...any) error { return sqlite.ExecRaw(t.Context(), old, q, args...) }
			return exec, func() storetest.OutboxStore {
				old.Close()
				s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
				if err != nil {
					t.Fatalf("open a store of schema version %d: %v", v, err)
				}
				return s
			}
		},
	})
}
