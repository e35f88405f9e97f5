package pollwarden

import "time"

// Lease is the right to send the next status request of one operation
// (R22). It is held only around one request, never while sleeping. Epoch
// increases with every acquisition; a write that names an older epoch, or
// a lease past ExpiresAt, fails with ErrLeaseLost (fencing). ExpiresAt is
// on the clock that judges leases (see LeaseParams.Now): on PostgreSQL
// the database's, not the holder's.
type Lease struct {
	OperationID string    `json:"operation_id"`
	Owner       string    `json:"owner"`
	Epoch       int64     `json:"epoch"`
	ExpiresAt   time.Time `json:"expires_at"`
}
