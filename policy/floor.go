package policy

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// Floor is the shortest time pollwarden leaves between two requests for
// one operation, whoever chose the delay: a provider's hint is raised to
// it, a callback's early poll waits for it after the last answer, and a
// submission or cancel that must be sent again waits it out. It is the
// contract's backoff base (R5), so one setting governs them all.
func Floor(c *pollwarden.ContractSpec) time.Duration { return c.Backoff.Base }

// SubmitRetryAt is when a submission that must be sent again (a retryable
// answer, SubmitAnswered's again) may go: one Floor after now. The
// controller waits for it rather than choosing a delay of its own.
func SubmitRetryAt(c *pollwarden.ContractSpec, now time.Time) time.Time {
	return now.Add(Floor(c))
}
