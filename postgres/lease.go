package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

// leaseState is the lease as stored beside an operation. A lease is held
// while now is strictly before its expiry: at the expiry instant it is
// already free, for LeaseAcquire and OperationSave alike.
type leaseState struct {
	owner   *string
	epoch   int64
	expires *string
}

// stored is the driver-neutral form that holds the fencing rules.
func (ls leaseState) stored() storerow.Lease {
	l := storerow.Lease{Epoch: ls.epoch}
	if ls.owner != nil {
		l.Owner = *ls.owner
	}
	if ls.expires != nil {
		l.Expires = *ls.expires
	}
	return l
}

// LeaseAcquire takes the operation's lease when it is free or expired on
// the database's clock (p.Now is not read), with the next epoch.
func (s *Store) LeaseAcquire(ctx context.Context, p pollwarden.LeaseParams) (*pollwarden.Lease, error) {
	if p.OperationID == "" || p.Owner == "" || p.TTL <= 0 {
		return nil, fmt.Errorf("postgres: acquire lease on %q: %w: need an operation id, an owner and a positive TTL",
			p.OperationID, pollwarden.ErrInvalid)
	}
	var epoch int64
	var exp time.Time
	err := s.write(ctx, func(tx pgx.Tx) error {
		var ls leaseState
		err := tx.QueryRow(ctx, "SELECT lease_owner, lease_epoch, lease_expires_at FROM operations WHERE id = $1 FOR UPDATE",
			p.OperationID).Scan(&ls.owner, &ls.epoch, &ls.expires)
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
		exp = now.Add(p.TTL)
		if err := storerow.CheckTime("lease expiry", exp); err != nil {
			return fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err)
		}
		held, err := ls.stored().HeldAt(now)
		if err != nil {
			return err
		}
		if held {
			return ls.stored().HeldError()
		}
		epoch = ls.epoch + 1
		_, err = tx.Exec(ctx,
			"UPDATE operations SET lease_owner = $1, lease_epoch = $2, lease_expires_at = $3 WHERE id = $4",
			p.Owner, epoch, storerow.FormatTime(exp), p.OperationID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: acquire lease on %q: %w", p.OperationID, err)
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
	_, err := s.pool.Exec(ctx,
		"UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3",
		l.OperationID, l.Owner, l.Epoch)
	if err != nil {
		return fmt.Errorf("postgres: release lease on %q: %w", l.OperationID, err)
	}
	return nil
}

// OperationClaim takes the lease and saves the reservation p.Reserve makes
// on the record read under it, in one transaction that first locks the
// operation's row (see pollwarden.Store). Whether the lease is free, and
// when the new one expires, is decided on the database's clock read after
// the row lock was granted, never on p.Now: p.Reserve still decides with
// the caller's own time whether a request is due.
func (s *Store) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	if err := storerow.CheckClaim(p); err != nil {
		return nil, nil, fmt.Errorf("postgres: claim %q: %w", p.OperationID, err)
	}
	var read *pollwarden.Operation
	var cl storerow.Claim
	err := s.write(ctx, func(tx pgx.Tx) error {
		var ls leaseState
		var seq int64
		var rec string
		stored := new(pollwarden.Operation)
		err := tx.QueryRow(ctx, `SELECT version, record, lease_owner, lease_epoch, lease_expires_at,
			coalesce((SELECT max(seq) FROM events WHERE operation_id = $1), 0)
			FROM operations WHERE id = $1 FOR UPDATE`, p.OperationID).
			Scan(&stored.Version, &rec, &ls.owner, &ls.epoch, &ls.expires, &seq)
		if errNoRows(err) {
			return pollwarden.ErrNotFound
		}
		if err != nil {
			return err
		}
		version := stored.Version
		if err := json.Unmarshal([]byte(rec), stored); err != nil {
			return fmt.Errorf("decode stored record: %w", err)
		}
		stored.Version = version // the column is authoritative
		read = stored
		now, err := s.now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		if cl, err = storerow.DecideClaim(s.sealer, stored, ls.stored(), now, p); err != nil || cl.Op == nil {
			return err
		}
		args, err := recordArgs(cl.Op)
		if err != nil {
			return err
		}
		l := cl.Lease
		args = append(args, l.Owner, l.Epoch, storerow.FormatTime(l.ExpiresAt), p.OperationID)
		if _, err := tx.Exec(ctx, updateClaimSQL, args...); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, p.OperationID, seq, cl.Prepared)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: claim %q: %w", p.OperationID, err)
	}
	if cl.Op == nil {
		return read, nil, nil
	}
	storerow.PublishEvents(cl.Events, cl.Prepared)
	return cl.Op, cl.Lease, nil
}
