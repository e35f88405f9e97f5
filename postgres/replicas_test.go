package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/storetest"
)

// verifyChain walks the whole store-wide chain with EventScan, a page at a
// time, checks it with audit.VerifyChain and that AuditHead is its end.
func verifyChain(t *testing.T, s pollwarden.Store) []pollwarden.Event {
	t.Helper()
	var all []pollwarden.Event
	for after := int64(0); ; {
		page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{AfterPos: after, Limit: 7})
		if err != nil {
			t.Fatalf("EventScan after %d: %v", after, err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Pos
	}
	if err := audit.VerifyChain(all); err != nil {
		t.Fatalf("store-wide chain: %v", err)
	}
	pos, hash, err := s.AuditHead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all); n == 0 || pos != all[n-1].Pos || hash != all[n-1].Hash || pos != int64(n) {
		t.Fatalf("AuditHead = %d %q; the chain has %d events", pos, hash, n)
	}
	return all
}

func newOp(id string, now time.Time) *pollwarden.Operation {
	return &pollwarden.Operation{
		ID: id, Contract: "report-export", ProviderJobID: "job-" + id,
		StatusURL: "https://api.example.com/v1/jobs/job-" + id, Fingerprint: "fp-" + id,
		StartedAt: now, DeadlineAt: now.Add(40 * time.Minute), NextPollAt: now,
		NextPollSource: pollwarden.DelayLocalBackoff, Phase: pollwarden.PhaseWaiting,
		MaxStatusRequests: 1000, MaxTransportFailures: 3, MaxRateLimited: 3,
	}
}

// TestReplicasLeasedIncrements simulates a fleet: several replicas, each
// with its own Store (its own pool), opened at the same moment on a new
// schema (so their migrations race), take the lease of one operation on
// the database's clock, reload, increment and save with the lease, and
// release it. No increment may be lost or doubled, events must be in
// commit order, and the store-wide chain — which other operations' writes
// interleave — must verify.
func TestReplicasLeasedIncrements(t *testing.T) {
	schema := freshSchema(t)
	const replicas, each = 4, 15
	stores := make([]*postgres.Store, replicas)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), testURL(t), postgres.Options{Schema: schema, MaxConns: 4})
			if err != nil {
				t.Errorf("replica %d: Open: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	now := time.Now()
	for _, id := range []string{"shared", "noise"} {
		if err := stores[0].OperationCreate(t.Context(), newOp(id, now),
			[]pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range stores {
		owner := fmt.Sprintf("replica-%d", i)
		wg.Go(func() {
			for done := 0; done < each; {
				l, err := s.LeaseAcquire(t.Context(), pollwarden.LeaseParams{OperationID: "shared", Owner: owner, TTL: 10 * time.Second})
				if errors.Is(err, pollwarden.ErrLeaseHeld) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("%s: acquire: %v", owner, err)
					return
				}
				op, err := s.OperationGet(t.Context(), "shared")
				if err != nil {
					t.Errorf("%s: get: %v", owner, err)
					return
				}
				op.StatusRequestsUsed++
				err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l,
					Events: []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventRequestSent,
						Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed, Detail: owner}}}})
				if err != nil {
					t.Errorf("%s: save with a current lease: %v", owner, err)
					return
				}
				if err := s.LeaseRelease(t.Context(), l); err != nil {
					t.Errorf("%s: release: %v", owner, err)
					return
				}
				done++
				// Interleave another operation's appends in the chain
				// (unleased saves racing on versions: retry conflicts).
				for {
					n, err := s.OperationGet(t.Context(), "noise")
					if err != nil {
						t.Errorf("%s: get noise: %v", owner, err)
						return
					}
					n.CompletedPolls++
					err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: n,
						Events: []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventStateChanged}}})
					if err == nil {
						break
					}
					if !errors.Is(err, pollwarden.ErrConflict) {
						t.Errorf("%s: save noise: %v", owner, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	got, err := stores[1].OperationGet(t.Context(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if got.StatusRequestsUsed != replicas*each || got.Version != 1+replicas*each {
		t.Fatalf("shared: used %d version %d, want %d and %d", got.StatusRequestsUsed, got.Version, replicas*each, 1+replicas*each)
	}
	evs, err := stores[2].EventList(t.Context(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+replicas*each {
		t.Fatalf("%d events for shared, want %d", len(evs), 1+replicas*each)
	}
	for i, e := range evs[1:] {
		if e.Data.RequestsUsed != i+1 {
			t.Fatalf("event seq %d records %d requests used, want %d: events out of commit order", e.Seq, e.Data.RequestsUsed, i+1)
		}
	}
	all := verifyChain(t, stores[3])
	if want := 2 + 2*replicas*each; len(all) != want {
		t.Fatalf("%d events in the chain, want %d", len(all), want)
	}
	var migrations int
	conn := rawConn(t)
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+".pollwarden_migrations").Scan(&migrations); err != nil {
		t.Fatal(err)
	}
	if want := storetest.MigrationCount(t, "migration"); migrations != want {
		t.Fatalf("%d migration rows after %d concurrent opens, want %d", migrations, replicas, want)
	}
}

func rawConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestEventsAppendOnly: the database itself refuses to change or remove
// audit events, and an operation with a trail cannot be deleted.
func TestEventsAppendOnly(t *testing.T) {
	schema := freshSchema(t)
	s := openIn(t, schema, postgres.Options{})
	defer s.Close()
	now := time.Now()
	if err := s.OperationCreate(t.Context(), newOp("op-1", now), []pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t)
	for _, q := range []string{
		"UPDATE %s.events SET kind = 'edited'",
		"DELETE FROM %s.events",
		"TRUNCATE %s.events",
		"DELETE FROM %s.operations",
		"UPDATE %s.audit_settings SET seal_key_id = 'x'",
	} {
		q = fmt.Sprintf(q, schema)
		_, err := conn.Exec(t.Context(), q)
		if err == nil {
			t.Errorf("%s: allowed", q)
		}
	}
	verifyChain(t, s)
	if evs, err := s.EventList(t.Context(), "op-1"); err != nil || len(evs) != 1 || evs[0].Kind != pollwarden.EventSubmitted {
		t.Fatalf("events after tampering attempts: %+v %v", evs, err)
	}
}

// TestDatabaseClockLeases: leases are judged on the database's clock: a
// lease taken on it is held now, and a caller's Now pinned past its expiry
// does not free it.
func TestDatabaseClockLeases(t *testing.T) {
	s := openFresh(t, postgres.Options{})
	defer s.Close()
	now := time.Now()
	if err := s.OperationCreate(t.Context(), newOp("op-1", now), nil); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t)
	var dbNow time.Time
	if err := conn.QueryRow(t.Context(), "SELECT clock_timestamp()").Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	l, err := s.LeaseAcquire(t.Context(), pollwarden.LeaseParams{OperationID: "op-1", Owner: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if d := l.ExpiresAt.Sub(dbNow); d < time.Minute || d > time.Minute+10*time.Second {
		t.Fatalf("lease expires %v after the database's clock, want about 1m", d)
	}
	_, err = s.LeaseAcquire(t.Context(), pollwarden.LeaseParams{OperationID: "op-1", Owner: "b", TTL: time.Minute})
	if !errors.Is(err, pollwarden.ErrLeaseHeld) {
		t.Fatalf("second acquire on the database clock: %v, want ErrLeaseHeld", err)
	}
	op, err := s.OperationGet(t.Context(), "op-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op}); !errors.Is(err, pollwarden.ErrLeaseHeld) {
		t.Fatalf("unleased save while held on the database clock: %v, want ErrLeaseHeld", err)
	}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l}); err != nil {
		t.Fatalf("leased save on the database clock: %v", err)
	}
	_, err = s.LeaseAcquire(t.Context(), pollwarden.LeaseParams{OperationID: "op-1", Owner: "b", TTL: time.Minute, Now: l.ExpiresAt})
	if !errors.Is(err, pollwarden.ErrLeaseHeld) {
		t.Fatalf("acquire with a caller's Now pinned at the expiry: %v, want ErrLeaseHeld", err)
	}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l, Now: l.ExpiresAt}); err != nil {
		t.Fatalf("holder's save with a caller's Now past its expiry: %v", err)
	}
}

// TestReopenAndSchemaIsolation: reopening applies nothing again, and two
// schemas in one database are separate stores.
func TestReopenAndSchemaIsolation(t *testing.T) {
	a, b := freshSchema(t), freshSchema(t)
	s1 := openIn(t, a, postgres.Options{})
	now := time.Now()
	if err := s1.OperationCreate(t.Context(), newOp("op-1", now), []pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	s2 := openIn(t, a, postgres.Options{})
	defer s2.Close()
	if _, err := s2.OperationGet(t.Context(), "op-1"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
	other := openIn(t, b, postgres.Options{})
	defer other.Close()
	if _, err := other.OperationGet(t.Context(), "op-1"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("another schema sees op-1: %v", err)
	}
	if pos, _, err := other.AuditHead(t.Context()); err != nil || pos != 0 {
		t.Fatalf("another schema's head: %d %v", pos, err)
	}
	if _, err := postgres.Open(t.Context(), testURL(t), postgres.Options{Schema: "Bad-Name"}); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("Open with a bad schema name: %v", err)
	}
}
