package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

func TestOutboxConformance(t *testing.T) {
	storetest.RunOutbox(t, func(t *testing.T) storetest.OutboxStore { return openTemp(t, sqlite.Options{}) })
}

// migrationCount is the number of migration files, as text: every one is
// applied exactly once.
func migrationCount(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("migration/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v", err)
	}
	return strconv.Itoa(len(files))
}
