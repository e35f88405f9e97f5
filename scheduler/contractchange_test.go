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
// says so, old → new) and escalates, sending nothing, an operation whose
// contract changed in a way that could widen it, instead of polling it
// under a file it was not created under.
func TestReloadedContractIsNeverSilent(t *testing.T) {
	r := newRig(t)
	ctl := r.controller(r.store, "owner-a", nil)
	lowered, raised := r.compile("low", ""), r.compile("high", "")
	r.srv.Script("j-low", fp.State("running", nil))
	r.srv.Script("j-high", fp.State("running", nil))
	r.submit(ctl, lowered, "op-low", "j-low")
	r.submit(ctl, raised, "op-high", "j-high")
	r.contract("low", ", max_transport_failures: 1") // from the default 3: taken up
	r.contract("high", ", max_rate_limited: 9")      // from the default 3: refused
	sched := scheduler.New(scheduler.Options{Controller: ctl, Contracts: r.set, Clock: r.clock, Poll: 50 * time.Millisecond})
	run := start(sched)
	waitFor(t, "both operations to stop waiting", 30*time.Second, func() bool { return r.waiting() == 0 })
	run.stop(t)

	high := r.get("op-high")
	if high.Phase != pollwarden.PhaseEscalated || high.Reason != pollwarden.ReasonIntegrationFailure || r.srv.Count("j-high") != 0 ||
		high.Escalation == nil || !strings.Contains(high.Escalation.Message, "limits.max_rate_limited 3 → 9") {
		t.Errorf("raised limit: %s/%s, %d sent, escalation %+v; want escalated naming the change, nothing sent",
			high.Phase, high.Reason, r.srv.Count("j-high"), high.Escalation)
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
