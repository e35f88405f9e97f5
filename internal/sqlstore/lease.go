package sqlstore

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// storedLease is the lease columns as scanned: NULL owner and expiry when
// no lease is held.
type storedLease struct {
	Owner   *string
	Epoch   int64
	Expires *string
}

// Lease is the driver-neutral form that holds the fencing rules.
func (sl storedLease) Lease() Lease {
	l := Lease{Epoch: sl.Epoch}
	if sl.Owner != nil {
		l.Owner = *sl.Owner
	}
	if sl.Expires != nil {
		l.Expires = *sl.Expires
	}
	return l
}

// Lease is the lease as stored beside an operation. A lease is held while
// now is strictly before its expiry: at the expiry instant it is already
// free, for a claim and OperationSave alike.
type Lease struct {
	// Owner and Expires are "" when no lease is stored.
	Owner   string
	Epoch   int64
	Expires string
}

// heldAt reports whether the stored lease is held at now.
func (ls Lease) heldAt(now time.Time) (bool, error) {
	if ls.Owner == "" || ls.Expires == "" {
		return false, nil
	}
	exp, err := parseTime(ls.Expires)
	if err != nil {
		return false, err
	}
	return now.Before(exp), nil
}

// heldError is the ErrLeaseHeld error naming the current holder.
func (ls Lease) heldError() error {
	return fmt.Errorf("%w: %q holds epoch %d until %s", pollwarden.ErrLeaseHeld, ls.Owner, ls.Epoch, ls.Expires)
}

// checkWriter applies R22's fencing to a save: with a lease it must be the
// current, unexpired one; without one, nobody else may hold the lease.
func (ls Lease) checkWriter(opID string, l *pollwarden.Lease, now time.Time) error {
	held, err := ls.heldAt(now)
	if err != nil {
		return err
	}
	if l == nil {
		if held {
			return ls.heldError()
		}
		return nil
	}
	switch {
	case l.OperationID != "" && l.OperationID != opID:
		return fmt.Errorf("%w: the lease is for operation %q", pollwarden.ErrLeaseLost, l.OperationID)
	case !held && ls.Owner != "" && ls.Owner == l.Owner && ls.Epoch == l.Epoch:
		return fmt.Errorf("%w: epoch %d expired at %s", pollwarden.ErrLeaseLost, l.Epoch, ls.Expires)
	case !held || ls.Owner != l.Owner || ls.Epoch != l.Epoch:
		return fmt.Errorf("%w: yours is epoch %d, current is epoch %d", pollwarden.ErrLeaseLost, l.Epoch, ls.Epoch)
	}
	return nil
}
