package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// LeaseAcquire takes the operation's lease when it is free or expired on
// the lease clock (see Dialect.LeaseNow), with the next epoch, without
// reserving anything: ErrLeaseHeld while another holds it. It is not part
// of pollwarden.Store (a step claims with OperationClaim); it is the
// embedder's way to hold an operation away from schedulers, and tests' way
// to play another process holding it.
func (s *Store) LeaseAcquire(ctx context.Context, p pollwarden.LeaseParams) (*pollwarden.Lease, error) {
	if p.OperationID == "" || p.Owner == "" || p.TTL <= 0 {
		return nil, fmt.Errorf("%s: acquire lease on %q: %w: need an operation id, an owner and a positive TTL",
			s.name, p.OperationID, pollwarden.ErrInvalid)
	}
	var l pollwarden.Lease
	err := s.d.Write(ctx, func(tx Querier) error {
		var sl storedLease
		now, err := s.readLocked(ctx, tx, "SELECT "+leaseCols+" FROM operations WHERE id = ?"+s.x.ForUpdate, p.OperationID, p.Now,
			&sl.Owner, &sl.Epoch, &sl.Expires)
		if err != nil {
			return err
		}
		exp := now.Add(p.TTL)
		if err := checkTime("lease expiry", exp); err != nil {
			return fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err)
		}
		if err := sl.Lease().claimable(now); err != nil {
			return err
		}
		l = pollwarden.Lease{OperationID: p.OperationID, Owner: p.Owner, Epoch: sl.Epoch + 1, ExpiresAt: exp}
		_, err = tx.Exec(ctx, "UPDATE operations SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ? WHERE id = ?",
			l.Owner, l.Epoch, FormatTime(exp), p.OperationID)
		return err
	})
	if err != nil {
		return nil, s.fail(err, "acquire lease on %q", p.OperationID)
	}
	return &l, nil
}

// LeaseRelease frees the lease only if l is still the current one (same
// owner and epoch); a lease already lost or taken over is left alone. The
// epoch is kept, so the next holder's epoch is still higher.
func (s *Store) LeaseRelease(ctx context.Context, l *pollwarden.Lease) error {
	if l == nil {
		return nil
	}
	err := s.d.Write(ctx, func(tx Querier) error {
		_, err := tx.Exec(ctx,
			"UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND lease_owner = ? AND lease_epoch = ?",
			l.OperationID, l.Owner, l.Epoch)
		return err
	})
	if err != nil {
		return s.fail(err, "release lease on %q", l.OperationID)
	}
	return nil
}

// OperationClaim takes the lease and saves the change p.Change makes
// on the record read under it, in one write transaction that first locks
// the operation's row (see pollwarden.Store). Whether the lease is free,
// and when the new one expires, is decided on the lease clock read after
// the row lock (see Dialect.LeaseNow); p.Change still decides with the
// caller's own time whether a request is due. With p.Have, Change runs on
// it before the transaction, which keeps that answer if the stored version
// is still Have's; otherwise, and without Have, Change runs under the
// write lock (again if the transaction is retried): the write lock is the
// bottleneck, so everything but the checks and the writes is done before.
func (s *Store) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	c, err := s.claimWrite(p)
	if err != nil {
		return nil, nil, s.fail(err, "claim %q", p.OperationID)
	}
	if err := s.writeGrouped(ctx, c.w); err != nil {
		return nil, nil, s.fail(err, "claim %q", p.OperationID)
	}
	op, l := c.result()
	return op, l, nil
}

// claimState is one claim's write (w) and what its decision leaves for
// result: built by claimWrite for OperationClaim and, many at once, for
// OperationClaimMany.
type claimState struct {
	w    rowWrite
	read *pollwarden.Operation
	cl   Claim
	held bool
}

// claimWrite checks p and builds its write: the row read under its lock
// (passed over where another writer holds it), the lease and the change
// decided on it, the key's quota taken after it.
func (s *Store) claimWrite(p pollwarden.ClaimParams) (*claimState, error) {
	if err := checkClaim(p); err != nil {
		return nil, err
	}
	pre, preRead, err := preClaim(s.sealer, p)
	if err != nil {
		return nil, err
	}
	var preArgs []any
	if pre != nil && pre.Op != nil {
		if preArgs, err = recordArgs(pre.Op); err != nil {
			return nil, err
		}
	}
	c := &claimState{}
	var sl storedLease
	var cs Chain
	var rec string
	var version int64
	var stored storedIndexed
	dest := append([]any{&version, &rec, &sl.Owner, &sl.Epoch, &sl.Expires}, stored.dest()...)
	var key string
	if p.Quota != nil {
		key = p.Quota.Key
	}
	c.w = rowWrite{
		opID: p.OperationID, query: s.q.claim, group: s.q.groupClaim, caller: p.Now, chain: &cs, key: key,
		dest: append(dest, s.chainDest(&cs)...),
		decide: func(ctx context.Context, tx Querier, found bool, now time.Time, keys *keyTx) (*Stmt, []pollwarden.Event, error) {
			c.held = false
			if !found {
				return nil, nil, s.lockedByAnother(ctx, tx, p.OperationID)
			}
			ls := sl.Lease()
			if err := ls.claimable(now); err != nil {
				return nil, nil, err
			}
			var args []any
			var err error
			if pre != nil && version == preRead.Version {
				// The stored record is the caller's copy: its change stands.
				c.read, c.cl, args = preRead, *pre, preArgs
			} else {
				if c.read, err = decodeRecord(version, rec); err != nil {
					return nil, nil, err
				}
				if c.cl, err = applyChange(s.sealer, c.read, p); err != nil || c.cl.Op == nil {
					return nil, nil, err
				}
				if args, err = recordArgs(c.cl.Op); err != nil {
					return nil, nil, err
				}
			}
			if c.cl.Op == nil {
				return nil, nil, nil
			}
			if err := c.cl.take(ls, now, p); err != nil {
				return nil, nil, err
			}
			if p.Quota != nil {
				hc, ok, err := s.takeKey(keys, p, c.read, &c.cl, now)
				if err != nil || !ok {
					return nil, nil, err
				}
				if hc != nil {
					c.cl, c.held = hc.Claim, true
					sql, set := s.q.up.stmt(updateSave, &stored, hc.args)
					return &Stmt{sql, append(set, p.OperationID)}, c.cl.Prepared, nil
				}
			}
			l := c.cl.Lease
			sql, set := s.q.up.stmt(updateClaim, &stored, args)
			set = append(set, l.Owner, l.Epoch, FormatTime(l.ExpiresAt), p.OperationID)
			return &Stmt{sql, set}, c.cl.Prepared, nil
		},
	}
	return c, nil
}

// result is what OperationClaim returns once c's write committed: the
// record as read and no lease when Change took nothing, the held wait
// without a lease, or the reservation with its lease; the events written
// are published.
func (c *claimState) result() (*pollwarden.Operation, *pollwarden.Lease) {
	if c.cl.Op == nil {
		return c.read, nil
	}
	publishEvents(c.cl.Events, c.cl.Prepared)
	if c.held {
		return c.cl.Op, nil
	}
	return c.cl.Op, c.cl.Lease
}

// lockedByAnother explains a claim's read that found no row: with
// SkipLocked, a row another transaction holds is passed over, so the
// operation exists but is being written (ErrLeaseHeld: look again later);
// otherwise, or when it is indeed missing, ErrNotFound.
func (s *Store) lockedByAnother(ctx context.Context, tx Querier, id string) error {
	if s.x.SkipLocked == "" {
		return pollwarden.ErrNotFound
	}
	var one int
	err := tx.QueryRow(ctx, "SELECT 1 FROM operations WHERE id = ?", id).Scan(&one)
	switch {
	case errors.Is(err, ErrNoRows):
		return pollwarden.ErrNotFound
	case err != nil:
		return err
	}
	return fmt.Errorf("%w: another writer is changing the operation", pollwarden.ErrLeaseHeld)
}
