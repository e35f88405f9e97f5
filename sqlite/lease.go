package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// leaseState is the lease as stored beside an operation. A lease is held
// while now is strictly before its expiry: at the expiry instant it is
// already free, for LeaseAcquire and OperationSave alike.
type leaseState struct {
	owner   sql.NullString
	epoch   int64
	expires sql.NullString
}

func (ls leaseState) heldAt(now time.Time) (bool, error) {
	if !ls.owner.Valid || !ls.expires.Valid {
		return false, nil
	}
	exp, err := parseTime(ls.expires.String)
	if err != nil {
		return false, err
	}
	return now.Before(exp), nil
}

// checkWriter applies R22's fencing to a save: with a lease it must be the
// current, unexpired one; without one, nobody else may hold the lease.
func (ls leaseState) checkWriter(opID string, l *pollwarden.Lease, now time.Time) error {
	held, err := ls.heldAt(now)
	if err != nil {
		return err
	}
	if l == nil {
		if held {
			return fmt.Errorf("%w: %q holds epoch %d until %s", pollwarden.ErrLeaseHeld, ls.owner.String, ls.epoch, ls.expires.String)
		}
		return nil
	}
	switch {
	case l.OperationID != "" && l.OperationID != opID:
		return fmt.Errorf("%w: the lease is for operation %q", pollwarden.ErrLeaseLost, l.OperationID)
	case !held && ls.owner.Valid && ls.owner.String == l.Owner && ls.epoch == l.Epoch:
		return fmt.Errorf("%w: epoch %d expired at %s", pollwarden.ErrLeaseLost, l.Epoch, ls.expires.String)
	case !held || ls.owner.String != l.Owner || ls.epoch != l.Epoch:
		return fmt.Errorf("%w: yours is epoch %d, current is epoch %d", pollwarden.ErrLeaseLost, l.Epoch, ls.epoch)
	}
	return nil
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
	if err := checkTime("lease expiry", exp); err != nil {
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
		held, err := ls.heldAt(now)
		if err != nil {
			return err
		}
		if held {
			return fmt.Errorf("%w: %q holds epoch %d until %s", pollwarden.ErrLeaseHeld, ls.owner.String, ls.epoch, ls.expires.String)
		}
		epoch = ls.epoch + 1
		_, err = tx.ExecContext(ctx,
			"UPDATE operations SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ? WHERE id = ?",
			p.Owner, epoch, formatTime(exp), p.OperationID)
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
