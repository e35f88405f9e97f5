package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
