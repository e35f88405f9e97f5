package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

// leaseState is the lease as stored beside an operation. A lease is held
// while now is strictly before its expiry: at the expiry instant it is
// already free, for LeaseAcquire and OperationSave alike.
type leaseState struct {
	owner   sql.NullString
	epoch   int64
	expires sql.NullString
}

// stored is the driver-neutral form that holds the fencing rules.
func (ls leaseState) stored() storerow.Lease {
	return storerow.Lease{Owner: ls.owner.String, Epoch: ls.epoch, Expires: ls.expires.String}
}

// LeaseAcquire takes the operation's lease when it is free or expired at
// p.Now (the wall clock when zero), with the next epoch.
func (s *Store) LeaseAcquire(ctx context.Context, p pollwarden.LeaseParams) (*pollwarden.Lease, error) {
	if p.OperationID == "" || p.Owner == "" || p.TTL <= 0 {
		return nil, fmt.Errorf("sqlite: acquire lease on %q: %w: need an operation id, an owner and a positive TTL",
			p.OperationID, pollwarden.ErrInvalid)
	}
	now := nowOr(p.Now)
	exp := now.Add(p.TTL)
	if err := storerow.CheckTime("lease expiry", exp); err != nil {
		return nil, fmt.Errorf("sqlite: acquire lease on %q: %w: %v", p.OperationID, pollwarden.ErrInvalid, err)
	}
	var epoch int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var ls leaseState
		err := tx.QueryRowContext(ctx, "SELECT lease_owner, lease_epoch, lease_expires_at FROM operations WHERE id = ?",
			p.OperationID).Scan(&ls.owner, &ls.epoch, &ls.expires)
		if errors.Is(err, sql.ErrNoRows) {
			return pollwarden.ErrNotFound
		}
		if err != nil {
			return err
		}
		held, err := ls.stored().HeldAt(now)
		if err != nil {
			return err
		}
		if held {
			return ls.stored().HeldError()
		}
		epoch = ls.epoch + 1
		_, err = tx.ExecContext(ctx,
			"UPDATE operations SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ? WHERE id = ?",
			p.Owner, epoch, storerow.FormatTime(exp), p.OperationID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: acquire lease on %q: %w", p.OperationID, err)
	}
	return &pollwarden.Lease{OperationID: p.OperationID, Owner: p.Owner, Epoch: epoch, ExpiresAt: exp}, nil
}

// LeaseRelease frees the lease only if l is still the current one (same
// owner and epoch); a lease already lost or taken over is left alone. The
// epoch is kept, so the next holder's epoch is still higher.
func (s *Store) LeaseRelease(ctx context.Context, l *pollwarden.Lease) error {
	if l == nil {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			"UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND lease_owner = ? AND lease_epoch = ?",
			l.OperationID, l.Owner, l.Epoch)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: release lease on %q: %w", l.OperationID, err)
	}
	return nil
}

// claimSQL reads, in a claim's transaction, everything the claim decides
// from and where its events go: the lease, the record, the chain's head
// and the operation's last seq, in one statement.
const claimSQL = "SELECT version, record, lease_owner, lease_epoch, lease_expires_at, " + headCols + ", " + seqCol +
	" FROM operations WHERE id = ?"

// OperationClaim takes the lease and saves the reservation p.Reserve makes
// on the record read under it, in one IMMEDIATE transaction (see
// pollwarden.Store). With p.Have, Reserve runs on it before the
// transaction, which keeps that answer if the stored version is still
// Have's; otherwise, and without Have, Reserve runs under the write lock
// (again if the transaction is retried).
func (s *Store) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	if err := storerow.CheckClaim(p); err != nil {
		return nil, nil, fmt.Errorf("sqlite: claim %q: %w", p.OperationID, err)
	}
	now := nowOr(p.Now)
	// With the caller's copy, everything but the checks and the writes is
	// done before the transaction: the write lock is this store's
	// bottleneck (one writer at a time, whatever the cores).
	pre, preRead, err := storerow.PreClaim(s.sealer, p)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: claim %q: %w", p.OperationID, err)
	}
	var preArgs []any
	if pre != nil && pre.Op != nil {
		if preArgs, err = recordArgs(pre.Op); err != nil {
			return nil, nil, fmt.Errorf("sqlite: claim %q: %w", p.OperationID, err)
		}
	}
	var read *pollwarden.Operation
	var cl storerow.Claim
	err = s.write(ctx, func(tx *sql.Tx) error {
		var ls leaseState
		var cs storerow.Chain
		var rec string
		var version int64
		err := tx.StmtContext(ctx, s.claimStmt).QueryRowContext(ctx, p.OperationID).
			Scan(&version, &rec, &ls.owner, &ls.epoch, &ls.expires, &cs.Pos, &cs.Hash, &cs.Seq)
		if errors.Is(err, sql.ErrNoRows) {
			return pollwarden.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := ls.stored().Claimable(now); err != nil {
			return err
		}
		var args []any
		if pre != nil && version == preRead.Version {
			// The stored record is the caller's copy: its reservation stands.
			read, cl, args = preRead, *pre, preArgs
		} else {
			stored := new(pollwarden.Operation)
			if err := json.Unmarshal([]byte(rec), stored); err != nil {
				return fmt.Errorf("decode stored record: %w", err)
			}
			stored.Version = version // the column is authoritative
			read = stored
			if cl, err = storerow.Reserve(s.sealer, stored, p); err != nil || cl.Op == nil {
				return err
			}
			if args, err = recordArgs(cl.Op); err != nil {
				return err
			}
		}
		if cl.Op == nil {
			return nil
		}
		if err := cl.Take(ls.stored(), now, p); err != nil {
			return err
		}
		l := cl.Lease
		args = append(slices.Clip(args), l.Owner, l.Epoch, storerow.FormatTime(l.ExpiresAt), p.OperationID)
		if _, err := tx.StmtContext(ctx, s.claimUpdateStmt).ExecContext(ctx, args...); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, p.OperationID, cs, cl.Prepared)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: claim %q: %w", p.OperationID, err)
	}
	if cl.Op == nil {
		return read, nil, nil
	}
	storerow.PublishEvents(cl.Events, cl.Prepared)
	return cl.Op, cl.Lease, nil
}

// hotStmts are the statements every step runs, prepared once per Store
// (database/sql then keeps a prepared copy per pooled connection):
// parsing a statement costs more than running it.
type hotStmts struct {
	getStmt, saveStmt, updateStmt, updateReleaseStmt, claimStmt, claimUpdateStmt *sql.Stmt
}

func (s *Store) prepareHot(ctx context.Context) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.getStmt, "SELECT version, record FROM operations WHERE id = ?"},
		{&s.saveStmt, "SELECT version, lease_owner, lease_epoch, lease_expires_at FROM operations WHERE id = ?"},
		{&s.updateStmt, updateOpSQL},
		{&s.updateReleaseStmt, updateReleaseSQL},
		{&s.claimStmt, claimSQL},
		{&s.claimUpdateStmt, updateClaimSQL},
	} {
		st, err := s.db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*p.dst = st
	}
	return nil
}

func (s *Store) closeHot() {
	for _, st := range []*sql.Stmt{s.getStmt, s.saveStmt, s.updateStmt, s.updateReleaseStmt, s.claimStmt, s.claimUpdateStmt} {
		if st != nil {
			st.Close()
		}
	}
}
