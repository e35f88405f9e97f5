package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
)

// decisionPoll is how often a long-running door looks for escalations due
// a reminder or an expiry, at the latest: a reminder or expiry is
// recorded at most this long after its time.
const decisionPoll = 5 * time.Second

// runDecisionClock starts the loop that reminds people of undecided
// escalations and applies the contract's default to expired ones
// (escalation.remind_after, expire_after); the channel closes when it has
// stopped after ctx ends.
func runDecisionClock(ctx context.Context, ctl *controller.Controller, set *contract.Set, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctl.RunDecisionClock(ctx, set.Get, decisionPoll, log.With("component", "decisions"))
	}()
	return done
}
