package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

func openTemp(t *testing.T, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "pollwarden.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) pollwarden.Store { return openTemp(t, sqlite.Options{}) })
}

func TestConformanceKeys(t *testing.T) {
	storetest.RunKeys(t, func(t *testing.T) (pollwarden.Store, func() pollwarden.Store) {
		path := filepath.Join(t.TempDir(), "pollwarden.db")
		open := func() pollwarden.Store {
			s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
		return open(), open
	})
}

func TestConformanceNormal(t *testing.T) {
	storetest.Run(t, func(t *testing.T) pollwarden.Store { return openTemp(t, sqlite.Options{Synchronous: "NORMAL"}) })
}

func TestConformanceSealed(t *testing.T) {
	storetest.Run(t, func(t *testing.T) pollwarden.Store {
		return openTemp(t, sqlite.Options{Sealer: storetest.SealKey(t, 1)})
	})
}
