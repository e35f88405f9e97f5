package operations

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// NoPollerAfter is how long past its next check a waiting operation must
// be before a door says nothing polls it. A poller holds the lease only
// while a request is in flight, so between checks the overdue time is
// what tells a live `wait` or daemon (due, then polling within seconds)
// from one that was interrupted or never came back. A minute covers a
// status call's timeout and a busy daemon's lag.
const NoPollerAfter = time.Minute

// NoPoller reports how long past its next check op is when it is waiting
// (or observing a cancel) and nothing has polled it for NoPollerAfter:
// the CLI's "(no poller)" and its hint, the console's mark.
func NoPoller(op *pollwarden.Operation, now time.Time) (time.Duration, bool) {
	if op.Phase != pollwarden.PhaseWaiting && op.Phase != pollwarden.PhaseCancelling {
		return 0, false
	}
	if op.NextPollAt.IsZero() {
		return 0, false
	}
	late := now.Sub(op.NextPollAt)
	return late, late > NoPollerAfter
}
