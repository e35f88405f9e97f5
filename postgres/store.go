package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

var _ pollwarden.Store = (*Store)(nil)

// recordCols are the operations columns written from an Operation, in the
// order recordArgs returns their values. The lease columns are not among
// them: a save never touches the lease.
var recordCols = []string{
	"contract", "provider_job_id", "status_url", "credential_name", "fingerprint",
	"phase", "reason", "started_at", "deadline_at", "next_poll_at", "finished_at",
	"status_requests_used", "max_status_requests", "transport_failures_used",
	"max_transport_failures", "rate_limited_used", "max_rate_limited",
	"completed_polls", "version", "owner", "record",
}

var (
	insertOpSQL = "INSERT INTO operations (id, " + strings.Join(recordCols, ", ") + ") VALUES (" +
		placeholders(1, len(recordCols)+1) + ") ON CONFLICT (id) DO NOTHING"
	updateOpSQL = func() string {
		set := make([]string, len(recordCols))
		for i, c := range recordCols {
			set[i] = c + " = $" + strconv.Itoa(i+1)
		}
		return "UPDATE operations SET " + strings.Join(set, ", ") + " WHERE id = $" + strconv.Itoa(len(recordCols)+1)
	}()
	// updateReleaseSQL is a save that also ends the saver's lease
	// (SaveParams.Release), keeping the epoch.
	updateReleaseSQL = strings.Replace(updateOpSQL, " WHERE id = ", ", lease_owner = NULL, lease_expires_at = NULL WHERE id = ", 1)
	// updateClaimSQL is a claim's write: the reserved record and the lease.
	updateClaimSQL = func() string {
		n := len(recordCols)
		return strings.Replace(updateOpSQL, " WHERE id = $"+strconv.Itoa(n+1),
			fmt.Sprintf(", lease_owner = $%d, lease_epoch = $%d, lease_expires_at = $%d WHERE id = $%d", n+1, n+2, n+3, n+4), 1)
	}()
)

// placeholders returns "$from, ..., $(from+n-1)".
func placeholders(from, n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(p, ", ")
}

// recordArgs encodes op as it will be stored. The JSON record is the source
// of truth on read; the columns copy it for queries.
func recordArgs(op *pollwarden.Operation) ([]any, error) {
	rec, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("%w: encode record: %v", pollwarden.ErrInvalid, err)
	}
	return []any{
		op.Contract, op.ProviderJobID, op.StatusURL, op.CredentialName, op.Fingerprint,
		string(op.Phase), string(op.Reason), storerow.FormatTime(op.StartedAt), storerow.FormatTime(op.DeadlineAt),
		storerow.FormatTime(op.NextPollAt), storerow.FormatTimePtr(op.FinishedAt),
		op.StatusRequestsUsed, op.MaxStatusRequests, op.TransportFailuresUsed,
		op.MaxTransportFailures, op.RateLimitedUsed, op.MaxRateLimited,
		op.CompletedPolls, op.Version, op.Owner, string(rec),
	}, nil
}

// write runs fn in one READ COMMITTED transaction and commits it. Row locks
// taken by fn (FOR UPDATE) make its checks hold until the commit.
func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// OperationCreate stores op with Version 1 (whatever op.Version was) and its
// first events. On success op.Version is 1 and events are numbered from 1.
func (s *Store) OperationCreate(ctx context.Context, op *pollwarden.Operation, events []pollwarden.Event) error {
	if op == nil || op.ID == "" {
		return fmt.Errorf("postgres: create operation: %w: empty operation id", pollwarden.ErrInvalid)
	}
	rec := *op
	rec.Version = 1
	args, err := recordArgs(&rec)
	if err != nil {
		return fmt.Errorf("postgres: create operation %q: %w", op.ID, err)
	}
	evs, err := storerow.PrepareEvents(s.sealer, op.ID, events)
	if err != nil {
		return fmt.Errorf("postgres: create operation %q: %w", op.ID, err)
	}
	err = s.write(ctx, func(tx pgx.Tx) error {
		// A concurrent create of the same id waits here for the other
		// transaction, then inserts nothing.
		tag, err := tx.Exec(ctx, insertOpSQL, append([]any{op.ID}, args...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pollwarden.ErrExists
		}
		return s.appendEvents(ctx, tx, op.ID, 0, evs)
	})
	if err != nil {
		return fmt.Errorf("postgres: create operation %q: %w", op.ID, err)
	}
	op.Version = 1
	storerow.PublishEvents(events, evs)
	return nil
}

// OperationGet returns the stored record or ErrNotFound.
func (s *Store) OperationGet(ctx context.Context, id string) (*pollwarden.Operation, error) {
	op, err := scanOp(s.pool.QueryRow(ctx, "SELECT version, record FROM operations WHERE id = $1", id))
	if errNoRows(err) {
		err = pollwarden.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get operation %q: %w", id, err)
	}
	return op, nil
}

// OperationList returns records newest first (by creation), optionally only
// those in p.Phase and of p.Owner, and at most p.Limit of them (Limit <= 0:
// all). With p.DueBefore it returns waiting and cancelling operations due
// at or before it, oldest due first: for the waiting ones the literal
// 'waiting' matches the partial index operations_due, which then serves the
// range, the order and the limit; the few cancelling ones come through
// operations_phase, and the two are merged.
func (s *Store) OperationList(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	if p.DueBefore.IsZero() {
		return s.list(ctx, p)
	}
	return storerow.MergeDue(p, func(phase pollwarden.Phase) ([]*pollwarden.Operation, error) {
		q := p
		q.Phase = phase
		return s.list(ctx, q)
	})
}

// list runs one query of OperationList; with DueBefore, p.Phase is one of
// the due phases.
func (s *Store) list(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	q, args := listSQL(p)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list operations: %w", err)
	}
	defer rows.Close()
	var out []*pollwarden.Operation
	for rows.Next() {
		op, err := scanOp(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list operations: %w", err)
		}
		out = append(out, op)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list operations: %w", err)
	}
	return out, nil
}

// listSQL is OperationList's query and its arguments.
func listSQL(p pollwarden.ListParams) (string, []any) {
	q := "SELECT version, record FROM operations"
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	due := !p.DueBefore.IsZero()
	switch {
	case due && p.Phase == pollwarden.PhaseCancelling:
		where = append(where, "phase = 'cancelling'", "next_poll_at <= "+arg(storerow.FormatTime(storerow.ClampYear(p.DueBefore))))
	case due:
		where = append(where, "phase = 'waiting'", "next_poll_at <= "+arg(storerow.FormatTime(storerow.ClampYear(p.DueBefore))))
	}
	if p.Phase != "" && !due {
		where = append(where, "phase = "+arg(string(p.Phase)))
	}
	if p.Owner != "" {
		where = append(where, "owner = "+arg(p.Owner))
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if due {
		q += " ORDER BY next_poll_at, created_order"
	} else {
		q += " ORDER BY created_order DESC"
	}
	if p.Limit > 0 {
		q += " LIMIT " + arg(p.Limit)
	}
	return q, args
}

func scanOp(row pgx.Row) (*pollwarden.Operation, error) {
	var version int64
	var rec string
	if err := row.Scan(&version, &rec); err != nil {
		return nil, err
	}
	op := new(pollwarden.Operation)
	if err := json.Unmarshal([]byte(rec), op); err != nil {
		return nil, fmt.Errorf("decode stored record: %w", err)
	}
	op.Version = version // the column is authoritative
	return op, nil
}

// OperationSave replaces the record in one transaction that first locks the
// operation's row, then checks the lease (a fenced-out writer gets
// ErrLeaseLost even if its version is also stale, so it stops rather than
// reloading and retrying), on the database's clock, and then the version.
// On success p.Op.Version is
// incremented and p.Events are numbered, chained and appended; with
// p.Release the lease, checked current above, is freed by the same UPDATE.
func (s *Store) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	op := p.Op
	if op == nil || op.ID == "" {
		return fmt.Errorf("postgres: save operation: %w: empty operation id", pollwarden.ErrInvalid)
	}
	rec := *op
	rec.Version = op.Version + 1
	args, err := recordArgs(&rec)
	if err != nil {
		return fmt.Errorf("postgres: save operation %q: %w", op.ID, err)
	}
	evs, err := storerow.PrepareEvents(s.sealer, op.ID, p.Events)
	if err != nil {
		return fmt.Errorf("postgres: save operation %q: %w", op.ID, err)
	}
	err = s.write(ctx, func(tx pgx.Tx) error {
		var version, seq int64
		var ls leaseState
		err := tx.QueryRow(ctx, `SELECT version, lease_owner, lease_epoch, lease_expires_at,
			coalesce((SELECT max(seq) FROM events WHERE operation_id = $1), 0)
			FROM operations WHERE id = $1 FOR UPDATE`, op.ID).
			Scan(&version, &ls.owner, &ls.epoch, &ls.expires, &seq)
		if errNoRows(err) {
			return pollwarden.ErrNotFound
		}
		if err != nil {
			return err
		}
		now, err := s.now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		if err := ls.stored().CheckWriter(op.ID, p.Lease, now); err != nil {
			return err
		}
		if version != op.Version {
			return fmt.Errorf("%w: stored version %d, yours %d", pollwarden.ErrConflict, version, op.Version)
		}
		update := updateOpSQL
		if p.Release && p.Lease != nil {
			update = updateReleaseSQL
		}
		if _, err := tx.Exec(ctx, update, append(args, op.ID)...); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, op.ID, seq, evs)
	})
	if err != nil {
		return fmt.Errorf("postgres: save operation %q: %w", op.ID, err)
	}
	op.Version = rec.Version
	storerow.PublishEvents(p.Events, evs)
	return nil
}

// now is the time every lease decision is made at: the database's clock,
// read after the caller's row lock was granted, one clock for every
// replica whatever their own clocks say. The caller's t is ignored (a
// replica whose clock runs ahead must not see a live lease as expired),
// except in a store opened for the conformance suite, which moves time
// by hand (see Options.callerClock).
func (s *Store) now(ctx context.Context, tx pgx.Tx, t time.Time) (time.Time, error) {
	if s.callerClock && !t.IsZero() {
		return t, nil
	}
	var now time.Time
	if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}
