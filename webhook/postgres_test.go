package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden/postgres"
)

// openPostgres opens a PostgreSQL store in a fresh schema, dropped when
// the test ends. Without POLLWARDEN_TEST_PG the test skips, or fails under
// CI=true.
func openPostgres(t *testing.T) store {
	t.Helper()
	url := os.Getenv("POLLWARDEN_TEST_PG")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("POLLWARDEN_TEST_PG is not set; CI needs the PostgreSQL tests")
		}
		t.Skip("POLLWARDEN_TEST_PG is not set")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "pwhook_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	st, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
