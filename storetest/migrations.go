package storetest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pollwarden/pollwarden"
)

// MigrationHarness opens a driver's store at an older schema version, so
// that the suite can check what migrating it does to the rows it holds.
type MigrationHarness struct {
	// Versions is the number of the driver's migration steps.
	Versions int
	// SelfNumbered: the operations' created_order column numbers new rows
	// itself (a raw insert must then leave it out).
	SelfNumbered bool
	// OpenAt returns a new, empty database migrated up to version v only,
	// as a raw statement runner ("?" placeholders), and a function that
	// opens it as a store of this pollwarden, which migrates it to the end.
	// The suite closes the stores it opens.
	OpenAt func(t *testing.T, v int) (exec func(query string, args ...any) error, open func() OutboxStore)
}

// RunMigrations runs the migration cases: a store made at each older
// schema version, holding rows written then, keeps them through the
// migrations, and takes new writes on them.
func RunMigrations(t *testing.T, h MigrationHarness) {
	if h.Versions < 1 || h.OpenAt == nil {
		t.Fatal("storetest: a MigrationHarness needs its versions and OpenAt")
	}
	for v := 1; v < h.Versions; v++ {
		t.Run(fmt.Sprintf("FromVersion%d", v), func(t *testing.T) { testMigrateFrom(t, h, v) })
	}
}

// oldOp is the record written at an older version: every field a record of
// that time could hold, and no owner (the column came with version 3).
func oldOp(id string) *pollwarden.Operation {
	op := fullOp(id)
	op.Owner = ""
	op.Version = 1
	return op
}

// seedOld writes, through raw SQL of the schema at version v, one
// operation and, from version 2 (the outbox), one delivered webhook.
func seedOld(t *testing.T, h MigrationHarness, exec func(string, ...any) error, v int, op *pollwarden.Operation) {
	t.Helper()
	rec, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	cols := "id, contract, provider_job_id, status_url, credential_name, fingerprint, phase, reason, started_at, deadline_at," +
		" next_poll_at, finished_at, status_requests_used, max_status_requests, transport_failures_used, max_transport_failures," +
		" rate_limited_used, max_rate_limited, completed_polls, version, record"
	vals := "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
	if !h.SelfNumbered {
		cols, vals = "created_order, "+cols, "1, "+vals
	}
	var finished any
	if op.FinishedAt != nil {
		finished = stored(*op.FinishedAt)
	}
	err = exec("INSERT INTO operations ("+cols+") VALUES ("+vals+")",
		op.ID, op.Contract, op.ProviderJobID, op.StatusURL, op.CredentialName, op.Fingerprint, string(op.Phase), string(op.Reason),
		stored(op.StartedAt), stored(op.DeadlineAt), stored(op.NextPollAt), finished, op.StatusRequestsUsed, op.MaxStatusRequests,
		op.TransportFailuresUsed, op.MaxTransportFailures, op.RateLimitedUsed, op.MaxRateLimited, op.CompletedPolls, op.Version, string(rec))
	if err != nil {
		t.Fatalf("insert an operation at schema version %d: %v", v, err)
	}
	if v < 2 {
		return
	}
	err = exec("INSERT INTO webhook_outbox (webhook_id, key, endpoint, event_pos, operation_id, type, body, created_at, status,"+
		" attempts, next_attempt_at, last_status, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'delivered', 1, ?, 204, ?)",
		"wh-old", "key-old", "ops", 1, op.ID, "operation.created", []byte(`{"id":"`+op.ID+`"}`), stored(t0), stored(t0), stored(t0))
	if err != nil {
		t.Fatalf("insert a webhook at schema version %d: %v", v, err)
	}
}

// stored is a time in the stores' fixed-width text form.
func stored(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

func testMigrateFrom(t *testing.T, h MigrationHarness, v int) {
	exec, open := h.OpenAt(t, v)
	op := oldOp("op-old")
	seedOld(t, h, exec, v, op)
	s := open()
	t.Cleanup(func() { s.Close() })

	same(t, "the record written at version "+fmt.Sprint(v), get(t, s, "op-old"), op)
	list, err := s.OperationList(t.Context(), pollwarden.ListParams{})
	if err != nil || len(list) != 1 || list[0].ID != "op-old" || list[0].Owner != "" {
		t.Fatalf("list after migrating: %+v %v, want op-old without an owner", list, err)
	}
	// The migrated row takes new writes: a save with events starts the
	// chain, and a new operation is listed after it.
	got := get(t, s, "op-old")
	got.StatusRequestsUsed++
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: got, Now: t0,
		Events: []pollwarden.Event{{At: t0, Kind: pollwarden.EventRequestSent}}}); err != nil {
		t.Fatalf("save of the migrated row: %v", err)
	}
	verify(t, s, "op-old", 1)
	create(t, s, newOp("op-new"))
	list, err = s.OperationList(t.Context(), pollwarden.ListParams{})
	if err != nil || len(list) != 2 || list[0].ID != "op-new" || list[1].ID != "op-old" {
		t.Fatalf("list after a new create: %v %v, want op-new then op-old", ids(list), err)
	}
	msgs, err := s.OutboxList(t.Context(), pollwarden.OutboxListParams{})
	switch {
	case err != nil:
		t.Fatalf("OutboxList: %v", err)
	case v >= 2 && (len(msgs) != 1 || msgs[0].ID != "wh-old" || msgs[0].Status != pollwarden.OutboxDelivered || msgs[0].SettledAt == nil):
		t.Fatalf("webhooks after migrating from version %d: %+v, want wh-old delivered", v, msgs)
	case v < 2 && len(msgs) != 0:
		t.Fatalf("webhooks after migrating from version %d: %+v, want none", v, msgs)
	}
}

func ids(ops []*pollwarden.Operation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.ID
	}
	return out
}

// FirstSteps is dir of fsys with only its first v migration files
// (NNN_name.sql, in name order), for a driver's MigrationHarness.
func FirstSteps(t testing.TB, fsys fs.FS, dir string, v int) fs.FS {
	t.Helper()
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil || v > len(names) {
		t.Fatalf("the first %d migration steps of %d: %v", v, len(names), err)
	}
	slices.Sort(names)
	out := fstest.MapFS{}
	for _, n := range names[:v] {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = &fstest.MapFile{Data: b}
	}
	return out
}
