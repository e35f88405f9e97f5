package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/sqlite"
)

// TestProbeWrite: the probe commits (the WAL gains frames) without growing
// the store or touching the chain, and fails while another process holds
// the write lock.
func TestProbeWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pw.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.OperationCreate(ctx, waitingOp("a"), nil); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	pos, head, _ := st.AuditHead(ctx)
	dbBefore, walBefore := size(path), size(path+"-wal")
	for range 3 {
		if err := st.ProbeWrite(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if size(path+"-wal") <= walBefore {
		t.Fatal("the probe committed nothing: the WAL did not grow")
	}
	if size(path) != dbBefore {
		t.Fatalf("the probe grew the store from %d to %d bytes", dbBefore, size(path))
	}
	if p, h, _ := st.AuditHead(ctx); p != pos || h != head {
		t.Fatal("the probe changed the audit chain")
	}

	other, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := st.ProbeWrite(ctx); err == nil {
		t.Fatal("the probe succeeded while another connection held the write lock")
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := st.ProbeWrite(ctx); err != nil {
		t.Fatalf("after the lock was released: %v", err)
	}
}
