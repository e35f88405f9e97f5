package sqlite_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// rawDB opens the file with the bare driver, as an outside tool would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	db, err := sql.Open(sqlite.DriverName, u.String()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func rawExec(t *testing.T, path, q string) error {
	t.Helper()
	db := rawDB(t, path)
	defer db.Close()
	_, err := db.Exec(q)
	return err
}

func rawQuery(t *testing.T, path, q string) string {
	t.Helper()
	db := rawDB(t, path)
	defer db.Close()
	var v any
	if err := db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return fmt.Sprint(v)
}

func TestEventsAppendOnly(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	defer s.Close()
	op := &pollwarden.Operation{ID: "op-1", Phase: pollwarden.PhaseWaiting}
	if err := s.OperationCreate(t.Context(), op, []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventSubmitted}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE events SET kind = 'decision'",
		"DELETE FROM events",
		"DELETE FROM operations",
		"UPDATE operations SET id = 'op-2'",
	} {
		if err := rawExec(t, s.Path(), q); err == nil {
			t.Errorf("%s succeeded on the audit trail", q)
		} else if !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if evs, _ := s.EventList(t.Context(), "op-1"); len(evs) != 1 || evs[0].Kind != pollwarden.EventSubmitted {
		t.Fatalf("events changed: %+v", evs)
	}
}

func TestStoredTimesSortAsText(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	defer s.Close()
	base := time.Date(2030, 1, 1, 0, 0, 5, 0, time.UTC)
	for i, d := range []time.Duration{500 * time.Millisecond, 0, time.Nanosecond} {
		op := &pollwarden.Operation{ID: fmt.Sprint("op-", i), Phase: pollwarden.PhaseWaiting,
			NextPollAt: base.Add(d).In(time.FixedZone("E", 3600))}
		if err := s.OperationCreate(t.Context(), op, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := rawQuery(t, s.Path(), "SELECT group_concat(id, ' ') FROM (SELECT id FROM operations ORDER BY next_poll_at)")
	if got != "op-1 op-2 op-0" {
		t.Fatalf("due order %q, want op-1 op-2 op-0", got)
	}
}
