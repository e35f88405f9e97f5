package controller

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// TestLeaseLastsTwoTimeoutsPlusSlack: while a status request is in
// flight, the step's lease (R22) holds until two status timeouts plus
// the slack after the step began, and not past it: the default slack is
// five seconds, Options.LeaseSlack changes it, so a test that kills an
// owner need not wait the default out.
func TestLeaseLastsTwoTimeoutsPlusSlack(t *testing.T) {
	for _, slack := range []time.Duration{0, 300 * time.Millisecond} {
		r := newRig(t, "")
		r.srv.Script("j1", fp.State("running", nil))
		r.submit("op1", "j1", policy.NewParams{})
		getenv := func(k string) (string, bool) { return testToken, k == "CTL_TOKEN" }
		ctl := New(Options{Store: r.store, Clock: r.clock, Rand: rand.New(rand.NewPCG(1, 2)), Owner: "owner-b", LeaseSlack: slack,
			Prober: prober.New(prober.Options{Now: r.clock.Now, Getenv: getenv})})
		want := 2*r.ex.Spec().Status.Timeout + slack
		if slack == 0 {
			want = 2*r.ex.Spec().Status.Timeout + DefaultLeaseSlack
		}
		began := r.clock.Now()
		var heldBefore, freeAfter bool
		r.srv.OnRequest(func(string) {
			heldBefore = !r.freeAt("op1", began.Add(want-time.Millisecond))
			freeAfter = r.freeAt("op1", began.Add(want))
		})
		_, _ = ctl.Step(context.Background(), r.ex, "op1") // the probe took the lease: the save may be refused
		if !heldBefore || !freeAfter {
			t.Errorf("slack %v: lease held just before %v: %v, free at %v: %v; want held, then free", slack, want, heldBefore, want, freeAfter)
		}
	}
}
