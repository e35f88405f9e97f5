package pollwarden

import (
	"context"
	"time"
)

// StoreClock is a Store with a clock every process sharing it reads alike:
// PostgreSQL's, which the replicas of a fleet on many machines share. The
// decision clock (reminders and expiries of decision requests) judges on
// it when the store has one, as leases do, so a replica whose own clock
// runs ahead neither expires a request early nor applies its default
// before the approver's window ends. A store without one (SQLite, on one
// machine) is judged on the caller's clock.
type StoreClock interface {
	StoreNow(ctx context.Context) (time.Time, error)
}
