package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

// snapshot records a directory's names and file contents, to prove that a
// refused open wrote nothing: no changed byte, no -wal or -shm file.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()+"/"] = nil
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("directory changed: %d files before, %d after", len(before), len(after))
	}
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Fatalf("%s changed", name)
		}
	}
}

// foreignSQLite writes a SQLite file of another application.
func foreignSQLite(t *testing.T, path string, appID int) {
	t.Helper()
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO notes (body) VALUES ('keep me')",
		"PRAGMA application_id = " + strconv.Itoa(appID),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the path to open
		want  string                                // in the error message
		kind  error
	}{
		{"missing directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "nope", "p.db")
		}, "nope", sqlite.ErrUnusable},
		{"parent is a file", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600)
			return filepath.Join(dir, "f", "p.db")
		}, "not a directory", sqlite.ErrUnusable},
		{"path is a directory", func(t *testing.T, dir string) string {
			os.Mkdir(filepath.Join(dir, "d"), 0o700)
			return filepath.Join(dir, "d")
		}, "not a regular file", sqlite.ErrUnusable},
		{"text file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "notes.txt")
			os.WriteFile(p, []byte("meeting notes, not a database\n"), 0o600)
			return p
		}, "not an SQLite database", sqlite.ErrNotStore},
		{"short file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "short")
			os.WriteFile(p, []byte("SQLite"), 0o600)
			return p
		}, "not an SQLite database", sqlite.ErrNotStore},
		{"foreign application id", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "other.db")
			foreignSQLite(t, p, 7)
			return p
		}, "application_id is 0x00000007", sqlite.ErrNotStore},
		{"tables without pollwarden schema", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "other.db")
			foreignSQLite(t, p, 0)
			return p
		}, "no pollwarden schema", sqlite.ErrNotStore},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.setup(t, dir)
			before := snapshot(t, dir)
			s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open error %q: want %v naming %q and saying %q", err, tc.kind, path, tc.want)
			}
			sameSnapshot(t, before, snapshot(t, dir))
		})
	}
}

func TestOpenRefusesReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write to any directory")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	path := filepath.Join(dir, "p.db")
	if _, err := sqlite.Open(t.Context(), path, sqlite.Options{}); !errors.Is(err, sqlite.ErrUnusable) || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("Open in a read-only directory: %v", err)
	}
}

func TestOpenBadOptions(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{Synchronous: "OFF"})
	if err == nil || !strings.Contains(err.Error(), "OFF") {
		t.Fatalf("Open with synchronous OFF: %v", err)
	}
}

func TestOpenNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := rawExec(t, path, "INSERT INTO pollwarden_migrations VALUES (999, '999_future', 'x')"); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(t.Context(), path, sqlite.Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func TestOpenEmptyFileAndReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "odd ?#% name.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 { // reopening must not apply migrations again
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal"})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		// A second store on the same file in the same process.
		s2, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		s2.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	if got, want := rawQuery(t, path, "SELECT count(*) FROM pollwarden_migrations"), strconv.Itoa(storetest.MigrationCount(t, "migration")); got != want {
		t.Fatalf("%s migrations recorded, want %s", got, want)
	}
	if got := rawQuery(t, path, "PRAGMA application_id"); got != "1886350444" {
		t.Fatalf("application_id %s", got)
	}
	if got := rawQuery(t, path, "PRAGMA journal_mode"); got != "wal" {
		t.Fatalf("journal_mode %s", got)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "probe") }) {
		t.Fatalf("writability probe left behind: %v", names)
	}
}
