// Package sqlite is the embedded pollwarden.Store: one SQLite file in WAL
// mode, pure Go (modernc.org/sqlite, no cgo), safe for several goroutines
// and for several processes on one machine sharing the file.
//
// Every write runs in a BEGIN IMMEDIATE transaction, so the write lock is
// taken before anything is read and a version or lease check can never be
// invalidated by another process before the commit. Writes of one process
// that queue for the lock share a transaction (group commit), each in its
// own savepoint, so one commit serves many writes. Open refuses, without
// writing a byte, any file that is not already a pollwarden store or empty.
package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// ApplicationID marks a SQLite file as a pollwarden store ("poll" in ASCII,
// stored in the file header by PRAGMA application_id). A file carrying any
// other id belongs to someone else and is never touched.
const ApplicationID = 0x706f6c6c

// Open's refusals, for errors.Is. Both leave the file untouched.
var (
	// ErrNotStore: the file exists but is not a pollwarden store (not
	// SQLite, or another application's SQLite file).
	ErrNotStore = errors.New("not a pollwarden store")
	// ErrUnusable: the location cannot hold a store (missing or read-only
	// directory, a directory or unwritable file at the path).
	ErrUnusable = errors.New("cannot keep a store here")
	// ErrNoStore: a read-only open found no store (see Options.ReadOnly).
	// The same value as postgres.ErrNoStore.
	ErrNoStore = sqlstore.ErrNoStore
	// ErrSchemaBehind: a read-only open found an older schema, which only
	// a read-write open migrates.
	ErrSchemaBehind = sqlstore.ErrSchemaBehind
	// ErrSealing: the store's sealing and the key given to Open disagree,
	// so events cannot be appended (see CheckSealing). It is the same value
	// in every driver; such errors also wrap audit.ErrNoKey or
	// audit.ErrWrongKey.
	ErrSealing = sqlstore.ErrSealing
)

// DefaultBusyTimeout is how long SQLite itself waits for another
// connection's lock before reporting SQLITE_BUSY; the transaction is then
// retried a few times more (see write).
const DefaultBusyTimeout = 10 * time.Second

var sqliteHeader = []byte("SQLite format 3\x00")

// Options tune Open. The zero value is the safe default.
type Options struct {
	// Synchronous is "FULL" (the default: a committed save survives power
	// loss) or "NORMAL" (faster; in WAL mode the last commits may be lost on
	// power loss, but never on a process crash, and the file stays intact).
	Synchronous string
	// BusyTimeout bounds each wait for another process's write lock
	// (default DefaultBusyTimeout, at least 1 ms).
	BusyTimeout time.Duration
	// ReadOnly opens an existing store for reading only, for commands that
	// only read: the file is opened read-only, never created, switched to
	// WAL or migrated. A missing or empty file, or a SQLite database
	// without pollwarden's schema, fails with ErrNoStore; a schema older
	// than this pollwarden's with ErrSchemaBehind. Writes fail.
	ReadOnly bool
	// Sealer, when set, seals (encrypts) event payloads before they are
	// appended and opens them in EventList. Records are never sealed. The
	// first append fixes a store as plain or sealed with one key; appends
	// with a missing or another key then fail with ErrSealing and write
	// nothing (see CheckSealing). EventScan, AuditHead and verification
	// need no key.
	Sealer audit.Sealer
	// migrations replaces the embedded migration files (a "migration"
	// directory of NNN_name.sql): only the conformance suite sets it,
	// through export_test.go, to make stores of an older schema.
	migrations fs.FS
	// noLinger: groups never wait for more writes (see sqlstore's
	// Syntax.Linger); only tests that make groups by holding the writer
	// slot set it, through export_test.go, so that each write they queue
	// stays one pending write.
	noLinger bool
}

// Store implements pollwarden.Store and pollwarden.Outbox over one SQLite
// file: the shared SQL store (sqlstore) over SQLite's dialect.
type Store struct {
	*sqlstore.Store
	db   *sql.DB
	path string
	file *openFile
	// wslot (capacity one) is held by the goroutine committing this
	// process's writes, so that goroutines queue in Go instead of sleeping
	// in SQLite's busy handler, which polls with growing sleeps and would
	// add latency under contention; group holds the writes waiting for it,
	// committed together (see write). Other processes are still excluded
	// by BEGIN IMMEDIATE.
	wslot     chan struct{}
	gmu       sync.Mutex
	group     []*pendingWrite
	closeOnce sync.Once
	// stmts are the store's statements, prepared once (see stmtCache).
	stmts *stmtCache
	// migrations are the schema steps (see Options.migrations).
	migrations fs.FS
	noLinger   bool
	closeErr   error
}

// Open opens the store at path, creating and migrating it when the file does
// not exist or is empty. It refuses, naming the path and leaving the file
// unchanged: a directory that does not exist or is not writable, a file that
// is not SQLite, and a SQLite file of another application.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	syncMode := strings.ToUpper(opts.Synchronous)
	switch syncMode {
	case "":
		syncMode = "FULL"
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("sqlite: open %q: synchronous %q: want FULL or NORMAL", path, opts.Synchronous)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}

	if opts.ReadOnly {
		if err := checkExists(abs); err != nil {
			return nil, err
		}
	}
	// Opens and closes are serialised process-wide: see openFile.
	files.Lock()
	defer files.Unlock()
	f := files.find(abs)
	if f == nil {
		// Only read the header when this process has no connection to the
		// file; see openFile for why.
		if err := checkPath(abs); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open(driverName, dsn(abs, syncMode, max(busy.Milliseconds(), 1), opts.ReadOnly))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
	}
	db.SetMaxIdleConns(4)
	s := &Store{db: db, path: abs, wslot: make(chan struct{}, 1), stmts: &stmtCache{db: db}, migrations: opts.migrations, noLinger: opts.noLinger}
	if s.migrations == nil {
		s.migrations = migrationFiles
	}
	s.Store = sqlstore.New(dialect{s}, opts.Sealer)
	if opts.ReadOnly {
		err = s.checkSchema(ctx)
	} else {
		err = s.init(ctx)
	}
	if err != nil {
		s.stmts.close()
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
	}
	if f == nil {
		if f, err = files.add(abs); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
		}
	}
	f.refs++
	s.file = f
	return s, nil
}

// Path is the absolute path of the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the store; calling it again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		files.Lock()
		defer files.Unlock()
		s.stmts.close()
		s.closeErr = s.db.Close()
		files.release(s.file)
	})
	return s.closeErr
}

// walCheckpointPages is the WAL size, in pages, past which a commit
// checkpoints (SQLite's default is 1,000). A checkpoint copies each page
// the WAL holds once, however often it was written since, so a larger
// WAL copies a page rewritten by many steps fewer times (measured: the
// checkpoint's share of BenchmarkStep's CPU 3.6 % at 1,000 pages, 1.8 % at
// 4,000). The WAL file then stays at about 16 MB (4 KiB pages) instead of
// 4 MB; it is reused, not grown, after each checkpoint.
const walCheckpointPages = 4000

// dsn builds a URI whose parameters every pooled connection applies: the
// busy timeout, foreign keys, temporary storage in memory (a grouped
// multi-row UPDATE keeps a statement journal of the pages it changes; in
// a temporary file that was a write syscall per page), the synchronous
// level, the WAL size that triggers a checkpoint (walCheckpointPages),
// and BEGIN IMMEDIATE
// for every read-write transaction; a read-only store's connections open
// the file read-only (mode=ro) and never create it. journal_mode is
// deliberately absent: it is persistent and rewrites the file, so init
// sets it only after the file is known to be ours.
func dsn(abs, syncMode string, busyMS int64, readOnly bool) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letter
	}
	u := url.URL{Scheme: "file", Path: p}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "temp_store(2)")
	q.Add("_pragma", "synchronous("+syncMode+")")
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walCheckpointPages))
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("_txlock", "immediate")
	}
	return u.String() + "?" + q.Encode()
}

// checkExists refuses, for a read-only open, a path where no store can
// be: nothing there, or an empty file (which a read-write open would turn
// into a new store).
func checkExists(abs string) error {
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("sqlite: open %q: %w: the file does not exist (a command that only reads never creates a store)", abs, ErrNoStore)
	case err != nil:
		return fmt.Errorf("sqlite: open %q: %w: %w", abs, ErrUnusable, err)
	case st.Mode().IsRegular() && st.Size() == 0:
		return fmt.Errorf("sqlite: open %q: %w: the file is empty (a command that only reads never creates a store)", abs, ErrNoStore)
	}
	return nil
}

// checkPath refuses locations SQLite could not use safely and files that are
// not SQLite, before the driver opens (and so possibly writes) anything.
// Location problems wrap ErrUnusable (and the os error); content problems
// wrap ErrNotStore.
func checkPath(abs string) error {
	fail := func(kind error, format string, args ...any) error {
		return fmt.Errorf("sqlite: open %q: %w: "+format, append([]any{abs, kind}, args...)...)
	}
	dir := filepath.Dir(abs)
	st, err := os.Stat(dir)
	if err != nil {
		return fail(ErrUnusable, "directory: %w", err)
	}
	if !st.IsDir() {
		return fail(ErrUnusable, "%q is not a directory", dir)
	}
	// WAL mode creates -wal and -shm files beside the store, so the
	// directory itself must be writable, not only the file.
	probe, err := os.CreateTemp(dir, ".pollwarden-probe-*")
	if err != nil {
		return fail(ErrUnusable, "directory %q is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())

	st, err = os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fail(ErrUnusable, "%w", err)
	}
	if !st.Mode().IsRegular() {
		return fail(ErrUnusable, "not a regular file")
	}
	// O_RDWR checks writability without changing a byte or the mtime.
	fh, err := os.OpenFile(abs, os.O_RDWR, 0)
	if err != nil {
		return fail(ErrUnusable, "file is not writable: %w", err)
	}
	defer fh.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(fh, head)
	if n == 0 && err == io.EOF {
		return nil // empty: SQLite treats it as a new database
	}
	if err != nil || !bytes.Equal(head, sqliteHeader) {
		return fail(ErrNotStore, "not an SQLite database")
	}
	return nil
}

// openFile counts this process's stores on one file. POSIX record locks,
// which SQLite uses on Unix, belong to the process and are all dropped when
// the process closes ANY descriptor of the file; reading the header while
// another Store of this process holds locks on the file would silently strip
// them and let another process checkpoint and delete the WAL under it. So
// the header is read only while the process has no connection to the file,
// and opens and closes are serialised.
type openFile struct {
	info os.FileInfo
	refs int
}

var files registry

type registry struct {
	sync.Mutex
	open []*openFile
}

func (r *registry) find(abs string) *openFile {
	st, err := os.Stat(abs)
	if err != nil {
		return nil
	}
	for _, f := range r.open {
		if os.SameFile(f.info, st) {
			return f
		}
	}
	return nil
}

func (r *registry) add(abs string) (*openFile, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	f := &openFile{info: st}
	r.open = append(r.open, f)
	return f, nil
}

func (r *registry) release(f *openFile) {
	if f.refs--; f.refs > 0 {
		return
	}
	for i, g := range r.open {
		if g == f {
			r.open = append(r.open[:i], r.open[i+1:]...)
			return
		}
	}
}
