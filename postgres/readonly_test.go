package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/postgres"
)

// TestReadOnlyNeverCreatesOrMigrates: a read-only open of a schema that
// does not exist, or exists without tables, fails with ErrNoStore and
// creates nothing; one of an existing store reads it and refuses writes.
func TestReadOnlyNeverCreatesOrMigrates(t *testing.T) {
	ctx := context.Background()
	url := testURL(t)
	schema := freshSchema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	objects := func() (schemas, tables int) {
		t.Helper()
		err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1),
			(SELECT count(*) FROM information_schema.tables WHERE table_schema = $1)`, schema).Scan(&schemas, &tables)
		if err != nil {
			t.Fatal(err)
		}
		return schemas, tables
	}

	_, err = postgres.Open(ctx, url, postgres.Options{Schema: schema, ReadOnly: true})
	if !errors.Is(err, postgres.ErrNoStore) {
		t.Fatalf("missing schema: %v, want ErrNoStore", err)
	}
	if s, n := objects(); s != 0 || n != 0 {
		t.Fatalf("a read-only open left %d schemas and %d tables", s, n)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, url, postgres.Options{Schema: schema, ReadOnly: true})
	if !errors.Is(err, postgres.ErrNoStore) {
		t.Fatalf("empty schema: %v, want ErrNoStore", err)
	}
	if _, n := objects(); n != 0 {
		t.Fatalf("a read-only open made %d tables", n)
	}

	rw := openIn(t, schema, postgres.Options{})
	defer rw.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	op := &pollwarden.Operation{ID: "a", Contract: "report-export", ProviderJobID: "job-a", Fingerprint: "fp-a",
		StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, NextPollSource: pollwarden.DelayLocalBackoff,
		Phase: pollwarden.PhaseWaiting, MaxStatusRequests: 12, MaxTransportFailures: 3, MaxRateLimited: 3}
	if err := rw.OperationCreate(ctx, op, nil); err != nil {
		t.Fatal(err)
	}
	ro := openIn(t, schema, postgres.Options{ReadOnly: true})
	defer ro.Close()
	if _, err := ro.OperationGet(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	b := op.Clone()
	b.ID, b.Version = "b", 0
	if err := ro.OperationCreate(ctx, b, nil); err == nil {
		t.Fatal("a read-only store accepted a write")
	}
	// The readiness probe writes through the same path: it passes on the
	// store, fails on the read-only connections, and changes nothing.
	pos, head, _ := rw.AuditHead(ctx)
	if err := rw.ProbeWrite(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := ro.ProbeWrite(ctx); err == nil {
		t.Fatal("the write probe passed on read-only connections")
	}
	if p, h, _ := rw.AuditHead(ctx); p != pos || h != head {
		t.Fatal("the probe changed the audit chain")
	}

	// A schema behind this pollwarden's is refused, not migrated.
	if _, err := conn.Exec(ctx, "DELETE FROM "+schema+".pollwarden_migrations WHERE version = (SELECT max(version) FROM "+schema+".pollwarden_migrations)"); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, url, postgres.Options{Schema: schema, ReadOnly: true})
	if !errors.Is(err, postgres.ErrSchemaBehind) {
		t.Fatalf("schema behind: %v, want ErrSchemaBehind", err)
	}
}
