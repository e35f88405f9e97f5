package sqlstore

import (
	"context"
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// OperationCreateClaim creates p.Op with its first events and makes
// p.Claim on it in one write transaction (see pollwarden.Store): a
// create that may poll at once then commits its record, its reservation
// (R11), its lease and its quota take with one commit instead of two.
//
// The change is decided before the transaction, on the record as it will
// be created: nobody else can have changed a record that does not exist
// yet, and if the id turns out to be taken the transaction writes nothing
// (ErrExists). Under the write lock only the quota key is decided, on the
// lease clock, and the row is inserted once, as it ends: reserved and
// leased, holding a held quota's wait, or as created.
//
// The key's row is locked before the operation's row is inserted, unlike
// a claim (operation rows, then keys): a row being inserted is one no
// other transaction can hold or wait for, except a create of the same
// id, which takes the same key first; so no cycle of waits can form.
func (s *Store) OperationCreateClaim(ctx context.Context, p pollwarden.CreateClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	op := p.Op
	if op == nil || op.ID == "" {
		return nil, nil, fmt.Errorf("%s: create and claim: %w: empty operation id", s.name, pollwarden.ErrInvalid)
	}
	if err := s.checkCreateClaim(p); err != nil {
		return nil, nil, s.fail(err, "create and claim %q", op.ID)
	}
	created := op.Clone()
	created.Version = 1
	evs, err := prepareEvents(s.sealer, op.ID, p.Events)
	if err != nil {
		return nil, nil, s.fail(err, "create and claim %q", op.ID)
	}
	decided, err := applyChange(s.sealer, created, p.Claim)
	if err != nil {
		return nil, nil, s.fail(err, "create and claim %q", op.ID)
	}
	// The record is encoded once: as claimed, or (only when the claim
	// takes nothing, or its key takes nothing) as created.
	var claimArgs, createArgs []any
	if decided.Op != nil {
		claimArgs, err = recordArgs(decided.Op)
	} else {
		createArgs, err = recordArgs(created)
	}
	if err != nil {
		return nil, nil, s.fail(err, "create and claim %q", op.ID)
	}
	var cl Claim
	held := false
	err = s.d.Write(ctx, func(tx Querier) error {
		// A retried transaction decides the key again from the start.
		cl, held = decided, false
		args := createArgs
		var keys *keyTx
		if cl.Op != nil && p.Claim.Quota != nil {
			kt, err := s.lockKeysAlone(ctx, tx, []rowWrite{{key: p.Claim.Quota.Key}})
			if err != nil {
				return err
			}
			keys = kt
		}
		now, err := s.d.LeaseNow(ctx, tx, p.Claim.Now)
		if err != nil {
			return err
		}
		if cl.Op != nil {
			args = claimArgs
			if err := cl.take(Lease{}, now, p.Claim); err != nil {
				return err
			}
		}
		if keys != nil {
			hc, ok, err := s.takeKey(keys, p.Claim, created, &cl, now)
			switch {
			case err != nil:
				return err
			case !ok:
				if createArgs == nil {
					if createArgs, err = recordArgs(created); err != nil {
						return err
					}
				}
				args = createArgs
			case hc != nil:
				cl, held, args = hc.Claim, true, hc.args
			}
		}
		if err := s.insertClaimed(ctx, tx, op.ID, args, cl.Lease, held); err != nil {
			return err
		}
		if p.Contract != nil {
			if err := putContract(ctx, tx, p.Contract); err != nil {
				return err
			}
		}
		if keys != nil {
			if err := execAll(ctx, tx, keys); err != nil {
				return err
			}
		}
		all := append(append(make([]pollwarden.Event, 0, len(evs)+len(cl.Prepared)), evs...), cl.Prepared...)
		cs, err := s.createdChain(ctx, tx, op.ID, len(all) > 0)
		if err != nil {
			return err
		}
		// Last: where a dialect commits with its last batch, the events'
		// append is that batch.
		if err := s.appendEvents(ctx, tx, op.ID, cs, all); err != nil {
			return err
		}
		// appendEvents numbered all in place: the parts get their copies.
		copy(evs, all[:len(evs)])
		copy(cl.Prepared, all[len(evs):])
		return nil
	})
	if err != nil {
		return nil, nil, s.fail(err, "create and claim %q", op.ID)
	}
	op.Version = 1
	publishEvents(p.Events, evs)
	if cl.Op == nil {
		return created, nil, nil
	}
	publishEvents(cl.Events, cl.Prepared)
	if held {
		return cl.Op, nil, nil
	}
	return cl.Op, cl.Lease, nil
}

// checkCreateClaim refuses a claim the create cannot make: one checkClaim
// refuses, or one for another operation.
func (s *Store) checkCreateClaim(p pollwarden.CreateClaimParams) error {
	if err := checkClaim(p.Claim); err != nil {
		return err
	}
	if p.Claim.OperationID != p.Op.ID {
		return fmt.Errorf("%w: the claim is for %q, the create for %q", pollwarden.ErrInvalid, p.Claim.OperationID, p.Op.ID)
	}
	if p.Contract != nil {
		return checkContract(p.Contract)
	}
	return nil
}

// insertClaimed inserts the operation's row with args, and with lease
// when the claim took one; ErrExists when the id is taken.
func (s *Store) insertClaimed(ctx context.Context, tx Querier, id string, args []any, lease *pollwarden.Lease, held bool) error {
	query := s.q.insert
	row := append([]any{id}, args...)
	if lease != nil && !held {
		query = s.q.insertLeased
		row = append(row, lease.Owner, lease.Epoch, FormatTime(lease.ExpiresAt))
	}
	n, err := tx.Exec(ctx, query, row...)
	if err != nil {
		return err
	}
	if n == 0 {
		return pollwarden.ErrExists
	}
	return nil
}

// execAll writes the key rows the transaction changed.
func execAll(ctx context.Context, tx Querier, keys *keyTx) error {
	stmts, err := keys.stmts(nil)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	return nil
}
