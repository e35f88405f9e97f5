package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestOwnerMigrationKeepsOldRows: a store made before migration 003 is
// upgraded in place; its operations get no owner (so only those who see
// all see them) and lists by owner work at once; an operation an incident
// held gets its held_by column from its record (migration 010).
func TestOwnerMigrationKeepsOldRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pw.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	op := &pollwarden.Operation{ID: "old", Contract: "c", ProviderJobID: "j", Fingerprint: "f",
		StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, Phase: pollwarden.PhaseWaiting,
		NextPollSource: pollwarden.DelayProviderIncident, HeldBy: "inc-0123456789abcdef"}
	if err := s.OperationCreate(t.Context(), op, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Back to schema 2, as a store written by the previous release.
	for _, q := range []string{"DROP INDEX operations_held_by", "ALTER TABLE operations DROP COLUMN held_by",
		"DELETE FROM pollwarden_migrations WHERE version = 10", "DROP TABLE incidents", "DELETE FROM pollwarden_migrations WHERE version = 9",
		"DROP TABLE quota_keys", "DELETE FROM pollwarden_migrations WHERE version = 8",
		"DELETE FROM pollwarden_migrations WHERE version = 7", "DROP TABLE contracts", "DELETE FROM pollwarden_migrations WHERE version = 6",
		"DROP TRIGGER events_need_operation", "DELETE FROM pollwarden_migrations WHERE version = 5",
		"DROP INDEX operations_job", "DELETE FROM pollwarden_migrations WHERE version = 4",
		"DROP INDEX operations_owner", "ALTER TABLE operations DROP COLUMN owner",
		"DELETE FROM pollwarden_migrations WHERE version = 3"} {
		if err := rawExec(t, path, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if got := rawQuery(t, path, "SELECT owner FROM operations WHERE id = 'old'"); got != "" {
		t.Fatalf("old row's owner %q, want none", got)
	}
	got, err := s.OperationGet(t.Context(), "old")
	if err != nil || got.Owner != "" {
		t.Fatalf("old record: %+v, %v", got, err)
	}
	held, err := s.OperationList(t.Context(), pollwarden.ListParams{HeldBy: "inc-0123456789abcdef"})
	if err != nil || len(held) != 1 || held[0].ID != "old" {
		t.Fatalf("list held by the incident after the upgrade: %v, %v", held, err)
	}
	mine := &pollwarden.Operation{ID: "new", Contract: "c", ProviderJobID: "j2", Fingerprint: "f2", Owner: "build-agent",
		StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, Phase: pollwarden.PhaseWaiting}
	if err := s.OperationCreate(t.Context(), mine, nil); err != nil {
		t.Fatal(err)
	}
	list, err := s.OperationList(t.Context(), pollwarden.ListParams{Owner: "build-agent"})
	if err != nil || len(list) != 1 || list[0].ID != "new" {
		t.Fatalf("list by owner after the upgrade: %v, %v", list, err)
	}
}
