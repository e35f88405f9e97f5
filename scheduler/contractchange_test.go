package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/scheduler"
)

// TestReloadedContractIsNeverSilent: after a reload brings an edited
// file, the daemon takes up an edit that only lowers a limit (the story
// says so, old → new). Any other edit is never applied on its own: an
// operation whose store keeps its contract goes on under that one, its
// limits as they were; one created before contracts were kept (nothing
// else to run under) is escalated, sending nothing, naming the change.
func TestReloadedContractIsNeverSilent(t *testing.T) {
	r := newRig(t)
	ctl := r.controller(r.store, "owner-a", nil)
	lowered, raised, legacy := r.compile("low", ""), r.compile("high", ""), r.compile("legacy", "")
	r.srv.Script("j-low", fp.State("running", nil))
	r.srv.Script("j-high", fp.State("running", nil))
	r.srv.Script("j-legacy", fp.State("running", nil))
	r.submit(ctl, lowered, "op-low", "j-low")
	r.submit(ctl, raised, "op-high", "j-high")
	r.submit(ctl, legacy, "op-legacy", "j-legacy")
	old := r.get("op-legacy")
	old.ContractFingerprint = "" // as a record written before contracts were kept
	if err := r.store.OperationSave(context.Background(), pollwarden.SaveParams{Op: old}); err != nil {
		t.Fatal(err)
	}
	r.contract("low", ", max_transport_failures: 1") // from the default 3: taken up
	r.contract("high", ", max_rate_limited: 9")      // from the default 3: not applied
	r.contract("legacy", ", max_rate_limited: 9")
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Poll: 50 * time.Millisecond})
	run := start(sched)
	waitFor(t, "every operation to stop waiting", 30*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)

	high := r.get("op-high")
	if high.Reason != pollwarden.ReasonRequestBudgetExhausted || high.MaxRateLimited != 3 || r.srv.Count("j-high") != 5 {
		t.Errorf("raised limit, contract kept: %s/%s, max rate limited %d, %d sent; want polled under its stored contract to its budget",
			high.Phase, high.Reason, high.MaxRateLimited, r.srv.Count("j-high"))
	}
	gone := r.get("op-legacy")
	if gone.Phase != pollwarden.PhaseEscalated || gone.Reason != pollwarden.ReasonIntegrationFailure || r.srv.Count("j-legacy") != 0 ||
		gone.Escalation == nil || !strings.Contains(gone.Escalation.Message, "limits.max_rate_limited 3 → 9") {
		t.Errorf("raised limit, no contract kept: %s/%s, %d sent, escalation %+v; want escalated naming the change, nothing sent",
			gone.Phase, gone.Reason, r.srv.Count("j-legacy"), gone.Escalation)
	}
	low := r.get("op-low")
	if low.MaxTransportFailures != 1 || low.Reason != pollwarden.ReasonRequestBudgetExhausted || r.srv.Count("j-low") != 5 {
		t.Errorf("lowered limit: max transport failures %d, reason %s, %d sent", low.MaxTransportFailures, low.Reason, r.srv.Count("j-low"))
	}
	evs, err := r.store.EventList(context.Background(), "op-low")
	if err != nil {
		t.Fatal(err)
	}
	var story strings.Builder
	for _, e := range evs {
		story.WriteString(audit.Line(e, time.UTC) + "\n")
	}
	if !strings.Contains(story.String(), "contract changed: limits.max_transport_failures 3 → 1") {
		t.Errorf("the story does not say the change:\n%s", story.String())
	}
}
