package postgres_test

import (
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/storetest"
)

func TestOutboxConformance(t *testing.T) {
	testURL(t)
	storetest.RunOutbox(t, func(t *testing.T) storetest.OutboxStore { return openFresh(t, postgres.Options{}) })
}

// migrationCount is the number of migration files: every one is applied
// exactly once.
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migration/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v", err)
	}
	return len(files)
}
