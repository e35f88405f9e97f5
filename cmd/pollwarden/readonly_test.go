package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestReadOnlyCommandsOnAnEmptySchema: on a PostgreSQL schema without
// pollwarden's tables, every command that only reads exits 2 naming the
// schema, and the schema is still without tables afterwards (no
// migration ran).
func TestReadOnlyCommandsOnAnEmptySchema(t *testing.T) {
	t.Parallel()
	url := pgStore(t)
	schema := url[strings.LastIndex(url, "schema=")+len("schema="):]
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("POLLWARDEN_TEST_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ops", "list"}, {"ops", "show", "op-1"}, {"audit", "show", "op-1"},
		{"audit", "export"}, {"audit", "verify"}, {"audit", "head"}, {"webhooks", "list"}} {
		p := start(t, append(args, "--store", url)...)
		if code := p.exitCode(t); code != 2 || !strings.Contains(p.stderr.String(), schema) ||
			!strings.Contains(p.stderr.String(), "no pollwarden store") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming schema %s", args, code, p.stderr.String(), schema)
		}
		if strings.Contains(p.stdout.String(), "intact") {
			t.Errorf("%v reported an empty schema as intact", args)
		}
	}
	var tables int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("read-only commands made %d tables in %s", tables, schema)
	}
}
