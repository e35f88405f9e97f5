package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/postgres"
)

// TestGroupedSavesKeepEachWritesOwnResult: saves of one process that
// arrive together are committed in one transaction, and that must change
// nothing a caller sees. In each round, many saves race: one brings a
// stale version and two save the same operation from the same version;
// the refused ones fail alone (ErrConflict) and every other save is
// committed with its events, the store-wide chain intact. The rounds go
// on until groups of several writes were seen, so the grouped path is
// what was tested.
func TestGroupedSavesKeepEachWritesOwnResult(t *testing.T) {
	ctx := t.Context()
	s, err := postgres.Open(ctx, testURL(t), postgres.Options{Schema: freshSchema(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	const n = 24
	for round := 0; ; round++ {
		ops := make([]*pollwarden.Operation, n)
		for i := range ops {
			ops[i] = newOp(fmt.Sprintf("g%d-%d", round, i), now)
			if err := s.OperationCreate(ctx, ops[i], nil); err != nil {
				t.Fatal(err)
			}
		}
		stale := ops[3].Clone()
		stale.Version = 7
		twice := ops[5].Clone()
		saves := append([]*pollwarden.Operation{stale, twice}, ops...)
		saves = append(saves[:5], saves[6:]...) // ops[3] only as the stale copy
		errs := make([]error, len(saves))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, op := range saves {
			wg.Go(func() {
				<-start
				next := op.Clone()
				next.StatusRequestsUsed++
				ev := pollwarden.Event{At: now, Kind: pollwarden.EventRequestSent, Data: pollwarden.EventData{State: fmt.Sprint(next.StatusRequestsUsed)}}
				errs[i] = s.OperationSave(ctx, pollwarden.SaveParams{Op: next, Now: now, Events: []pollwarden.Event{ev}})
			})
		}
		close(start)
		wg.Wait()
		if !errors.Is(errs[0], pollwarden.ErrConflict) {
			t.Fatalf("round %d: the stale save: %v, want a conflict", round, errs[0])
		}
		var twiceErrs []error
		for i, op := range saves[1:] {
			if op.ID == ops[5].ID {
				twiceErrs = append(twiceErrs, errs[i+1])
				continue
			}
			if errs[i+1] != nil {
				t.Fatalf("round %d: save of %s failed for another's sake: %v", round, op.ID, errs[i+1])
			}
		}
		if len(twiceErrs) != 2 || (twiceErrs[0] == nil) == (twiceErrs[1] == nil) ||
			!errors.Is(errors.Join(twiceErrs...), pollwarden.ErrConflict) {
			t.Fatalf("round %d: two saves of one version: %v, want one committed and one conflict", round, twiceErrs)
		}
		for i, op := range ops {
			got, err := s.OperationGet(ctx, op.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(2)
			if i == 3 {
				want = 1
			}
			if got.Version != want || got.StatusRequestsUsed != int(want-1) {
				t.Fatalf("round %d: %s at version %d with %d requests, want version %d", round, op.ID, got.Version, got.StatusRequestsUsed, want)
			}
		}
		verifyChain(t, s)
		if groups, writes := s.WriteGroups(); groups > 0 && writes > groups {
			t.Logf("%d rounds; %d groups held %d writes", round+1, groups, writes)
			return
		}
		if round == 20 {
			t.Fatal("no two saves were ever committed together: the grouped path was not exercised")
		}
	}
}

// TestClaimPassesARowAnotherWriterHolds: a claim does not queue behind a
// transaction that holds the operation's row (another replica mid-write):
// it is refused at once as held, takes nothing, and succeeds once the row
// is free; a claim of an operation that does not exist is still not found.
func TestClaimPassesARowAnotherWriterHolds(t *testing.T) {
	ctx := t.Context()
	schema := freshSchema(t)
	s := openIn(t, schema, postgres.Options{})
	now := time.Now().UTC().Truncate(time.Millisecond)
	op := newOp("held", now)
	if err := s.OperationCreate(ctx, op, nil); err != nil {
		t.Fatal(err)
	}
	reserve := func(o *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
		o.StatusRequestsUsed++
		return o, []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}
	}
	claim := func(id string) (*pollwarden.Lease, error) {
		_, l, err := s.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: id, Owner: "a", Now: now, TTL: time.Minute, Change: reserve})
		return l, err
	}
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+schema+".operations WHERE id = 'held' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if l, err := claim("held"); !errors.Is(err, pollwarden.ErrLeaseHeld) || l != nil {
		t.Fatalf("claim of a row another transaction holds: lease %v, %v; want ErrLeaseHeld", l, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.OperationGet(ctx, "held")
	if err != nil || got.Version != 1 || got.StatusRequestsUsed != 0 {
		t.Fatalf("the refused claim wrote: %+v, %v", got, err)
	}
	if l, err := claim("held"); err != nil || l == nil || l.Epoch != 1 {
		t.Fatalf("claim once the row is free: %v, %v", l, err)
	}
	if _, err := claim("missing"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("claim of a missing operation: %v, want ErrNotFound", err)
	}
}

// TestGroupedRecordsInOneUpdate: a group's saves read their rows in one
// statement (a missing one refused alone) and its records are written by
// one UPDATE of arrays per form (a save, a save that frees the lease, a claim,
// each with or without a changed indexed column); every kind, a NULL and a
// set finished_at, a new phase, must land as if written one by one, and
// no group may fail as a whole (its writes would then run again alone and
// hide the fault).
func TestGroupedRecordsInOneUpdate(t *testing.T) {
	ctx := t.Context()
	s, err := postgres.Open(ctx, testURL(t), postgres.Options{Schema: freshSchema(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	reserve := func(o *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
		o.StatusRequestsUsed++
		return o, []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}
	}
	const n = 30
	for round := 0; ; round++ {
		ops := make([]*pollwarden.Operation, n)
		leases := make([]*pollwarden.Lease, n)
		for i := range ops {
			ops[i] = newOp(fmt.Sprintf("a%d-%d", round, i), now)
			if err := s.OperationCreate(ctx, ops[i], nil); err != nil {
				t.Fatal(err)
			}
			if i%3 == 2 {
				continue
			}
			op, l, err := s.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: ops[i].ID, Owner: "a", Now: now, TTL: time.Minute, Change: reserve})
			if err != nil {
				t.Fatal(err)
			}
			ops[i], leases[i] = op, l
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ops {
			wg.Go(func() {
				<-start
				next := ops[i].Clone()
				ev := []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}
				switch i % 3 {
				case 0: // a save that keeps the lease, no indexed column changed
					next.CompletedPolls++
					errs[i] = s.OperationSave(ctx, pollwarden.SaveParams{Op: next, Now: now, Lease: leases[i], Events: ev})
				case 1: // the end: a new phase, finished_at set, the lease freed
					next.Phase, next.FinishedAt = pollwarden.PhaseSucceeded, &now
					errs[i] = s.OperationSave(ctx, pollwarden.SaveParams{Op: next, Now: now, Lease: leases[i], Release: true, Events: ev})
				case 2:
					_, leases[i], errs[i] = s.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: next.ID, Owner: "b", Now: now, TTL: time.Minute, Change: reserve})
				}
			})
		}
		var missing error
		wg.Go(func() { // a save of no row, read in the same group: refused alone
			<-start
			gone := newOp(fmt.Sprintf("a%d-missing", round), now)
			gone.Version = 1
			missing = s.OperationSave(ctx, pollwarden.SaveParams{Op: gone, Now: now})
		})
		close(start)
		wg.Wait()
		if !errors.Is(missing, pollwarden.ErrNotFound) {
			t.Fatalf("round %d: save of a missing operation: %v, want ErrNotFound", round, missing)
		}
		for i, op := range ops {
			if errs[i] != nil {
				t.Fatalf("round %d: write %d of %s: %v", round, i%3, op.ID, errs[i])
			}
			got, err := s.OperationGet(ctx, op.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch i % 3 {
			case 0:
				if got.Version != 3 || got.CompletedPolls != 1 || got.Phase != pollwarden.PhaseWaiting || got.FinishedAt != nil {
					t.Fatalf("round %d: saved %s: %+v", round, op.ID, got)
				}
			case 1:
				if got.Version != 3 || got.Phase != pollwarden.PhaseSucceeded || got.FinishedAt == nil || !got.FinishedAt.Equal(now) {
					t.Fatalf("round %d: ended %s: %+v", round, op.ID, got)
				}
				if _, l, err := s.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: op.ID, Owner: "c", Now: now, TTL: time.Minute,
					Change: func(o *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) { return nil, nil }}); err != nil || l != nil {
					t.Fatalf("round %d: the released lease of %s: %v, %v", round, op.ID, l, err)
				}
			case 2:
				if got.Version != 2 || got.StatusRequestsUsed != 1 || leases[i] == nil || leases[i].Owner != "b" || leases[i].Epoch != 1 {
					t.Fatalf("round %d: claimed %s: %+v, lease %+v", round, op.ID, got, leases[i])
				}
			}
		}
		verifyChain(t, s)
		if b := s.BrokenGroups(); b != 0 {
			t.Fatalf("round %d: %d groups failed as a whole", round, b)
		}
		if groups, writes := s.WriteGroups(); groups > 0 && writes > 2*groups {
			t.Logf("%d rounds; %d groups held %d writes", round+1, groups, writes)
			return
		}
		if round == 20 {
			t.Fatal("few writes were ever committed together: the grouped path was not exercised")
		}
	}
}

// TestGroupedSaveReadWaitsForTheRowLock: a save's read, one statement for
// a group's saves, locks each row: a save of a row another transaction
// holds waits for its commit and then checks what it committed (here a
// new version: a conflict), never what was there before.
func TestGroupedSaveReadWaitsForTheRowLock(t *testing.T) {
	ctx := t.Context()
	schema := freshSchema(t)
	s := openIn(t, schema, postgres.Options{})
	now := time.Now().UTC().Truncate(time.Millisecond)
	op := newOp("locked", now)
	if err := s.OperationCreate(ctx, op, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "UPDATE "+schema+".operations SET version = version + 1 WHERE id = 'locked'"); err != nil {
		t.Fatal(err)
	}
	var xid string
	if err := tx.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&xid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		next := op.Clone()
		next.CompletedPolls++
		done <- s.OperationSave(ctx, pollwarden.SaveParams{Op: next, Now: now})
	}()
	watch, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	// Wait for a backend to queue on this transaction, and see where.
	for {
		select {
		case err := <-done:
			t.Fatalf("the save returned (%v) while another transaction held its row", err)
		default:
		}
		var queries []string
		rows, err := watch.Query(ctx, "SELECT a.query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "+
			"WHERE NOT l.granted AND l.locktype = 'transactionid' AND l.transactionid::text = $1", xid)
		if err == nil {
			queries, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(queries) == 0 {
			continue
		}
		if !strings.Contains(queries[0], "FOR UPDATE") {
			t.Fatalf("the save queued on the row in %q, not in its locking read", queries[0])
		}
		break
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("save after the other transaction committed a new version: %v, want ErrConflict", err)
	}
}
