package main

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"testing"

	_ "modernc.org/sqlite"
)

// TestServeReadyzWhileTheStoreIsLocked: a real daemon whose store cannot
// take a write, because another process holds the SQLite write lock,
// answers /readyz 503 while /healthz stays 200; once the lock is
// released /readyz is 200 again.
func TestServeReadyzWhileTheStoreIsLocked(t *testing.T) {
	t.Parallel()
	r := startDaemon(t)
	status := func(path string) int {
		t.Helper()
		resp, err := http.Get(r.base + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/readyz"); got != 200 {
		t.Fatalf("/readyz on a writable store: %d", got)
	}

	ctx := context.Background()
	db, err := sql.Open("sqlite", r.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while another process holds the write lock: %d, want 503", got)
	}
	if got := status("/healthz"); got != 200 {
		t.Fatalf("/healthz while the store is locked: %d, want 200", got)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/readyz to be 200 after the lock was released", func() bool { return status("/readyz") == 200 })
}
