package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	insertOpSQL = "INSERT INTO operations (id, created_order, " + strings.Join(recordCols, ", ") +
		") VALUES (?, (SELECT coalesce(max(created_order), 0) + 1 FROM operations)" +
		strings.Repeat(", ?", len(recordCols)) + ")"
	updateOpSQL = "UPDATE operations SET " + strings.Join(recordCols, " = ?, ") + " = ? WHERE id = ?"
	// updateReleaseSQL is a save that also ends the saver's lease
	// (SaveParams.Release), keeping the epoch.
	updateReleaseSQL = "UPDATE operations SET " + strings.Join(recordCols, " = ?, ") +
		" = ?, lease_owner = NULL, lease_expires_at = NULL WHERE id = ?"
	// updateClaimSQL is a claim's write: the reserved record and the lease.
	updateClaimSQL = "UPDATE operations SET " + strings.Join(recordCols, " = ?, ") +
		" = ?, lease_owner = ?, lease_epoch = ?, lease_expires_at = ? WHERE id = ?"
)

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

// OperationCreate stores op with Version 1 (whatever op.Version was) and its
// first events. On success op.Version is 1 and events are numbered from 1.
func (s *Store) OperationCreate(ctx context.Context, op *pollwarden.Operation, events []pollwarden.Event) error {
	if op == nil || op.ID == "" {
		return fmt.Errorf("sqlite: create operation: %w: empty operation id", pollwarden.ErrInvalid)
	}
	rec := *op
	rec.Version = 1
	args, err := recordArgs(&rec)
	if err != nil {
		return fmt.Errorf("sqlite: create operation %q: %w", op.ID, err)
	}
	evs, err := storerow.PrepareEvents(s.sealer, op.ID, events)
	if err != nil {
		return fmt.Errorf("sqlite: create operation %q: %w", op.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var exists bool
		var cs storerow.Chain
		var err error
		if len(evs) == 0 {
			err = tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM operations WHERE id = ?)", op.ID).Scan(&exists)
		} else {
			err = tx.StmtContext(ctx, s.createChainStmt).QueryRowContext(ctx, op.ID).Scan(&exists, &cs.Pos, &cs.Hash)
		}
		if err != nil {
			return err
		}
		if exists {
			return pollwarden.ErrExists
		}
		if _, err := tx.ExecContext(ctx, insertOpSQL, append([]any{op.ID}, args...)...); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, op.ID, cs, evs)
	})
	if err != nil {
		return fmt.Errorf("sqlite: create operation %q: %w", op.ID, err)
	}
	op.Version = 1
	storerow.PublishEvents(events, evs)
	return nil
}

// OperationGet returns the stored record or ErrNotFound.
func (s *Store) OperationGet(ctx context.Context, id string) (*pollwarden.Operation, error) {
	row := s.getStmt.QueryRowContext(ctx, id)
	op, err := scanOp(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = pollwarden.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get operation %q: %w", id, err)
	}
	return op, nil
}

// OperationList returns records newest first (by creation), optionally only
// those in p.Phase and of p.Owner, and at most p.Limit of them (Limit <= 0: all). With
// p.DueBefore it returns waiting and cancelling operations due at or
// before it, oldest due first: the waiting ones walking the partial index
// operations_due in order (named because the planner, without statistics,
// prefers operations_phase and sorts every waiting row; the literal
// 'waiting' matches the index's WHERE clause, a bound parameter would
// not), the few cancelling ones through operations_phase, merged.
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
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list operations: %w", err)
	}
	defer rows.Close()
	var out []*pollwarden.Operation
	for rows.Next() {
		op, err := scanOp(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list operations: %w", err)
		}
		out = append(out, op)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list operations: %w", err)
	}
	return out, nil
}

// listSQL is OperationList's query and its arguments.
func listSQL(p pollwarden.ListParams) (string, []any) {
	q := "SELECT version, record FROM operations"
	var where []string
	var args []any
	due := !p.DueBefore.IsZero()
	switch {
	case due && p.Phase == pollwarden.PhaseCancelling:
		q += " INDEXED BY operations_phase"
		where = append(where, "phase = 'cancelling'", "next_poll_at <= ?")
		args = append(args, storerow.FormatTime(storerow.ClampYear(p.DueBefore)))
	case due:
		q += " INDEXED BY operations_due"
		where = append(where, "phase = 'waiting'", "next_poll_at <= ?")
		args = append(args, storerow.FormatTime(storerow.ClampYear(p.DueBefore)))
	}
	if p.Phase != "" && !due {
		where = append(where, "phase = ?")
		args = append(args, string(p.Phase))
	}
	if p.Owner != "" {
		where = append(where, "owner = ?")
		args = append(args, p.Owner)
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
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	return q, args
}

func scanOp(row interface{ Scan(...any) error }) (*pollwarden.Operation, error) {
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

// OperationSave replaces the record in one IMMEDIATE transaction, checking
// the lease first (a fenced-out writer gets ErrLeaseLost even if its version
// is also stale, so it stops rather than reloading and retrying) and then
// the version. On success p.Op.Version is incremented and p.Events are
// numbered, chained and appended; with p.Release the lease, checked current
// above, is freed by the same UPDATE.
func (s *Store) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	op := p.Op
	if op == nil || op.ID == "" {
		return fmt.Errorf("sqlite: save operation: %w: empty operation id", pollwarden.ErrInvalid)
	}
	now := nowOr(p.Now)
	rec := *op
	rec.Version = op.Version + 1
	args, err := recordArgs(&rec)
	if err != nil {
		return fmt.Errorf("sqlite: save operation %q: %w", op.ID, err)
	}
	evs, err := storerow.PrepareEvents(s.sealer, op.ID, p.Events)
	if err != nil {
		return fmt.Errorf("sqlite: save operation %q: %w", op.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var version int64
		var ls leaseState
		var cs storerow.Chain
		var err error
		if len(evs) == 0 {
			err = tx.StmtContext(ctx, s.saveStmt).QueryRowContext(ctx, op.ID).
				Scan(&version, &ls.owner, &ls.epoch, &ls.expires)
		} else {
			err = tx.StmtContext(ctx, s.saveChainStmt).QueryRowContext(ctx, op.ID).
				Scan(&version, &ls.owner, &ls.epoch, &ls.expires, &cs.Pos, &cs.Hash, &cs.Seq)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return pollwarden.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := ls.stored().CheckWriter(op.ID, p.Lease, now); err != nil {
			return err
		}
		if version != op.Version {
			return fmt.Errorf("%w: stored version %d, yours %d", pollwarden.ErrConflict, version, op.Version)
		}
		update := s.updateStmt
		if p.Release && p.Lease != nil {
			update = s.updateReleaseStmt
		}
		if _, err := tx.StmtContext(ctx, update).ExecContext(ctx, append(args, op.ID)...); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, op.ID, cs, evs)
	})
	if err != nil {
		return fmt.Errorf("sqlite: save operation %q: %w", op.ID, err)
	}
	op.Version = rec.Version
	storerow.PublishEvents(p.Events, evs)
	return nil
}
