package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestGroupCommitKeepsEachWriteItsOwn queues writes behind a held writer
// slot so that they are committed as one group, with a write that
// conflicts and one whose caller gave up among them: each caller gets its
// own result, the failed writes leave no trace, and the audit chain over
// the group is whole.
func TestGroupCommitKeepsEachWriteItsOwn(t *testing.T) {
	s := openTemp(t, sqlite.NoLinger(sqlite.Options{}))
	defer s.Close()
	const n = 6
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ops := make([]*pollwarden.Operation, n)
	for i := range ops {
		ops[i] = &pollwarden.Operation{ID: fmt.Sprintf("op-%d", i), Phase: pollwarden.PhaseWaiting, StartedAt: now,
			DeadlineAt: now.Add(time.Hour), NextPollAt: now}
		if err := s.OperationCreate(t.Context(), ops[i], []pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
			t.Fatal(err)
		}
	}
	save := func(ctx context.Context, op *pollwarden.Operation) error {
		next := op.Clone()
		next.StatusRequestsUsed++
		return s.OperationSave(ctx, pollwarden.SaveParams{Op: next, Now: now,
			Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}})
	}
	release := sqlite.HoldWrites(s)
	results := make([]chan error, n+2)
	queue := func(i int, ctx context.Context, op *pollwarden.Operation) {
		results[i] = make(chan error, 1)
		go func() { results[i] <- save(ctx, op) }()
		for sqlite.PendingWrites(s) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	for i, op := range ops {
		queue(i, t.Context(), op)
	}
	// op-0 again from the same version: it conflicts with the first save
	// of the group.
	queue(n, t.Context(), ops[0])
	// A caller that gives up while queued.
	ctx, cancel := context.WithCancel(t.Context())
	queue(n+1, ctx, ops[1])
	cancel()
	// A write that fails after it has written: its savepoint undoes it.
	refused := errors.New("refused after writing")
	partial := make(chan error, 1)
	go func() {
		partial <- sqlite.Write(t.Context(), s, func(tx *sql.Tx) error {
			if _, err := tx.Exec("UPDATE operations SET phase = 'failed', version = 99 WHERE id = 'op-2'"); err != nil {
				return err
			}
			return refused
		})
	}()
	for sqlite.PendingWrites(s) < n+3 {
		time.Sleep(time.Millisecond)
	}
	release()
	if err := <-partial; !errors.Is(err, refused) {
		t.Fatalf("the partial write: %v, want its own error", err)
	}

	for i := range n {
		if err := <-results[i]; err != nil {
			t.Fatalf("save of op-%d in the group: %v", i, err)
		}
	}
	if err := <-results[n]; !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("conflicting save in the group: %v, want ErrConflict", err)
	}
	if err := <-results[n+1]; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned save in the group: %v, want context.Canceled", err)
	}
	for i := range n {
		op, err := s.OperationGet(t.Context(), fmt.Sprintf("op-%d", i))
		if err != nil || op.Version != 2 || op.StatusRequestsUsed != 1 || op.Phase != pollwarden.PhaseWaiting {
			t.Fatalf("op-%d after the group: %+v, %v; want version 2, one request", i, op, err)
		}
		if evs, err := s.EventList(t.Context(), op.ID); err != nil || len(evs) != 2 {
			t.Fatalf("op-%d has %d events (%v), want 2", i, len(evs), err)
		}
	}
	all, err := s.EventScan(t.Context(), pollwarden.EventScanParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2*n {
		t.Fatalf("%d events in the store, want %d", len(all), 2*n)
	}
	if err := audit.VerifyChain(all); err != nil {
		t.Fatalf("chain after a group commit: %v", err)
	}
}

// TestGroupWaitsForAnotherProcess: a group queued while another process
// holds the file's write lock commits once the lock is free (a busy
// group falls back to each write on its own, retried).
func TestGroupWaitsForAnotherProcess(t *testing.T) {
	s := openTemp(t, sqlite.NoLinger(sqlite.Options{BusyTimeout: 20 * time.Millisecond}))
	defer s.Close()
	now := time.Now()
	for i := range 4 {
		op := &pollwarden.Operation{ID: fmt.Sprintf("op-%d", i), Phase: pollwarden.PhaseWaiting, StartedAt: now, DeadlineAt: now.Add(time.Hour)}
		if err := s.OperationCreate(t.Context(), op, nil); err != nil {
			t.Fatal(err)
		}
	}
	done := holdWriteLock(t, s.Path(), 100*time.Millisecond)
	defer func() { <-done }()
	release := sqlite.HoldWrites(s)
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			op, err := s.OperationGet(t.Context(), fmt.Sprintf("op-%d", i))
			if err == nil {
				op.LastState = "running"
				err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: now})
			}
			errs <- err
		}()
	}
	for sqlite.PendingWrites(s) < 4 {
		time.Sleep(time.Millisecond)
	}
	release()
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("a grouped save after another process's lock: %v", err)
		}
	}
}
