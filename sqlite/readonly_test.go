package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

func waitingOp(id string) *pollwarden.Operation {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &pollwarden.Operation{
		ID: id, Contract: "report-export", ProviderJobID: "job-" + id, Fingerprint: "fp-" + id,
		StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now,
		NextPollSource: pollwarden.DelayLocalBackoff, Phase: pollwarden.PhaseWaiting,
		MaxStatusRequests: 12, MaxTransportFailures: 3, MaxRateLimited: 3,
	}
}

// TestReadOnlyNeverCreates: a read-only open of a missing or empty file
// fails with ErrNoStore naming the path, and the directory is as before.
func TestReadOnlyNeverCreates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	for _, path := range []string{filepath.Join(dir, "none.db"), empty} {
		_, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
		if !errors.Is(err, sqlite.ErrNoStore) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want ErrNoStore naming the path", path, err)
		}
	}
	sameSnapshot(t, before, snapshot(t, dir))
}

// TestReadOnlyReadsAndRefusesWrites: a store made by a read-write open is
// readable read-only, and a write through the read-only store fails.
func TestReadOnlyReadsAndRefusesWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pw.db")
	rw, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.OperationCreate(ctx, waitingOp("a"), nil); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.OperationGet(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := ro.OperationCreate(ctx, waitingOp("b"), nil); err == nil {
		t.Fatal("a read-only store accepted a write")
	}
}

// TestReadOnlyNeverMigrates: a store whose schema is behind is refused
// with ErrSchemaBehind and left behind.
func TestReadOnlyNeverMigrates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pw.db")
	rw, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rw.Close()
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() (n int) {
		if err := db.QueryRow("SELECT count(*) FROM pollwarden_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.Exec("DELETE FROM pollwarden_migrations WHERE version = (SELECT max(version) FROM pollwarden_migrations)"); err != nil {
		t.Fatal(err)
	}
	n := count()
	_, err = sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if !errors.Is(err, sqlite.ErrSchemaBehind) {
		t.Fatalf("%v, want ErrSchemaBehind", err)
	}
	if count() != n {
		t.Fatal("a read-only open migrated the store")
	}
}
