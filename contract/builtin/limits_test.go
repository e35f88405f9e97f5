package builtin_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
)

// TestBuiltinBudgetOutlastsDeadline: under each built-in's own backoff,
// with the quickest jitter once the delay is at its cap (0.5), the request
// budget is not spent before the deadline, so the deadline — fitted to the
// provider's job length — is what ends a wait that runs long, not a budget
// that was too small for it.
func TestBuiltinBudgetOutlastsDeadline(t *testing.T) {
	for _, in := range builtin.List() {
		ex, err := contract.Builtin(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		c := ex.Spec()
		var spent time.Duration
		n := 0
		for d := c.Backoff.Base; spent < c.Limits.Deadline; n++ {
			spent += d / 2
			d = min(2*d, c.Backoff.Max)
		}
		if n > c.Limits.MaxStatusRequests {
			t.Errorf("%s: %d requests may be needed to reach the %s deadline, budget is %d",
				in.Name, n, c.Limits.Deadline, c.Limits.MaxStatusRequests)
		}
	}
}
