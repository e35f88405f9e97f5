package sqlite_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// holdWriteLock takes the file's write lock from another connection, as
// another process would, and releases it after d.
func holdWriteLock(t *testing.T, path string, d time.Duration) <-chan struct{} {
	t.Helper()
	db := rawDB(t, path)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		conn.ExecContext(t.Context(), "COMMIT")
		conn.Close()
		db.Close()
	}()
	return done
}

func TestBusyRetried(t *testing.T) {
	s := openTemp(t, sqlite.Options{BusyTimeout: 20 * time.Millisecond})
	defer s.Close()
	op := &pollwarden.Operation{ID: "op-1", Phase: pollwarden.PhaseWaiting}
	if err := s.OperationCreate(t.Context(), op, nil); err != nil {
		t.Fatal(err)
	}

	// Held longer than the busy timeout but shorter than the retries.
	done := holdWriteLock(t, s.Path(), 100*time.Millisecond)
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: time.Now()}); err != nil {
		t.Fatalf("save while another connection briefly held the lock: %v", err)
	}
	<-done

	// Held for longer than every retry: a bounded failure, reported as busy.
	done = holdWriteLock(t, s.Path(), 1500*time.Millisecond)
	defer func() { <-done }()
	start := time.Now()
	err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: time.Now()})
	if c, ok := sqlite.ErrorCode(err); !ok || c&0xff != 5 {
		t.Fatalf("save under a held lock: %v, want SQLITE_BUSY", err)
	}
	if op.Version != 2 {
		t.Fatalf("failed save changed op.Version to %d", op.Version)
	}
	if d := time.Since(start); d > 1400*time.Millisecond {
		t.Fatalf("gave up only after %v", d)
	}
}
