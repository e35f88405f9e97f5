package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

// incidentsOf reads every incident of the rig's store.
func incidentsOf(t *testing.T, r *rig) []*pollwarden.Incident {
	t.Helper()
	list, err := r.store.IncidentList(context.Background(), pollwarden.IncidentListParams{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// openUnder reports the key's open incident, "" when none.
func openUnder(t *testing.T, r *rig) string {
	t.Helper()
	ks, err := r.store.KeyGet(context.Background(), "env:CTL_TOKEN")
	if err != nil || ks.Incident.Open == nil {
		return ""
	}
	return ks.Incident.Open.ID
}

// Five operations failing with 503 under one credential open one
// incident: the others hold and send nothing, one probe at a time goes
// out spaced by backoff, a valid answer closes it, and the held
// operations then resume spread, never in one burst.
func TestOutageOpensOneIncidentProbesOneAtATime(t *testing.T) {
	r := newRig(t, "")
	const n = 12
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("op%02d", i)
		job := fmt.Sprintf("j%02d", i)
		if i < 5 {
			r.srv.Script(job, fp.Code(503, nil), fp.Code(503, nil), fp.State("running", nil))
		} else {
			r.srv.Script(job, fp.State("running", nil))
		}
		r.submit(ids[i], job, policy.NewParams{})
	}
	ctx := context.Background()
	sent := func() (total int) {
		for i := range n {
			total += r.srv.Count(fmt.Sprintf("j%02d", i))
		}
		return total
	}
	var openSends []time.Time       // requests sent while the incident was open
	resumeSends := map[int64]int{}  // second → first requests of held ops after the close
	firstAfter := map[string]bool{} // held ops that sent after the close
	var closedAt time.Time
	heldEver := map[string]bool{}
	for tick := 0; tick < 900; tick++ {
		now := r.clock.Now()
		for _, id := range ids {
			op, err := r.store.OperationGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if op.Phase != pollwarden.PhaseWaiting || now.Before(op.NextPollAt) {
				continue
			}
			wasOpen, wasHeld := openUnder(t, r) != "", heldEver[id]
			before := sent()
			res, err := r.ctl.Step(ctx, r.ex, id)
			if err != nil {
				t.Fatalf("step %s at +%s: %v", id, now.Sub(op.StartedAt), err)
			}
			if sent() != before+btoi(res.Sent) {
				t.Fatalf("step %s sent %d requests", id, sent()-before)
			}
			switch {
			case res.Sent && wasOpen:
				openSends = append(openSends, now)
			case res.Sent && wasHeld && !firstAfter[id]:
				firstAfter[id] = true
				resumeSends[now.Unix()]++
			}
			if wasOpen && openUnder(t, r) == "" {
				closedAt = now
			}
			if after, _ := r.store.OperationGet(ctx, id); after.HeldBy != "" {
				heldEver[id] = true
			}
		}
		r.clock.Advance(time.Second)
	}
	incs := incidentsOf(t, r)
	if len(incs) != 1 {
		t.Fatalf("%d incidents, want one: %+v", len(incs), incs)
	}
	inc := incs[0]
	if inc.Kind != pollwarden.IncidentOutage || inc.Open() || inc.LastProbe != "HTTP 200" || closedAt.IsZero() {
		t.Fatalf("incident at the end: %+v (closed at %s)", inc, closedAt)
	}
	// While it was open: only probes, one at a time, spaced by backoff.
	if len(openSends) == 0 || len(openSends) > inc.Probes {
		t.Fatalf("%d requests while open, %d probes recorded", len(openSends), inc.Probes)
	}
	for i := 1; i < len(openSends); i++ {
		if gap := openSends[i].Sub(openSends[i-1]); gap < 5*time.Second {
			t.Fatalf("probes %d and %d only %s apart; the backoff is 5s", i-1, i, gap)
		}
	}
	// The held operations resumed, spread over their backoff.
	if len(firstAfter) < 5 {
		t.Fatalf("only %d held operations resumed: %v", len(firstAfter), firstAfter)
	}
	for sec, k := range resumeSends {
		if k > len(firstAfter)/2 {
			t.Fatalf("%d of %d held operations resumed in the same second %d: a burst", k, len(firstAfter), sec)
		}
	}
	// One incident_opened event in the whole store: one webhook.
	opened := 0
	for _, id := range ids {
		evs, _ := r.store.EventList(ctx, id)
		for _, e := range evs {
			if e.Kind == pollwarden.EventIncidentOpened {
				opened++
			}
		}
	}
	if opened != 1 {
		t.Fatalf("%d incident_opened events, want 1", opened)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A 401 on one operation opens a credential incident at once: every
// other operation under the credential holds and sends nothing more,
// however long it waits, until an approver decides.
func TestRefusedCredentialHoldsTheOthersAtOnce(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j0", fp.Code(401, nil))
	for i := 1; i < 4; i++ {
		r.srv.Script(fmt.Sprintf("j%d", i), fp.State("running", nil))
	}
	for i := range 4 {
		r.submit(fmt.Sprintf("op%d", i), fmt.Sprintf("j%d", i), policy.NewParams{})
	}
	ctx := context.Background()
	res, err := r.ctl.Step(ctx, r.ex, "op0")
	if err != nil || !res.Sent || res.Op.Reason != pollwarden.ReasonAuthorizationDenied {
		t.Fatalf("the refused step: %+v, %v", res.Op, err)
	}
	incs := incidentsOf(t, r)
	if len(incs) != 1 || incs[0].Kind != pollwarden.IncidentCredential || !incs[0].Open() {
		t.Fatalf("incidents after a 401: %+v", incs)
	}
	for range 20 {
		for i := 1; i < 4; i++ {
			id := fmt.Sprintf("op%d", i)
			op, _ := r.store.OperationGet(ctx, id)
			if r.clock.Now().Before(op.NextPollAt) {
				continue
			}
			if res, err := r.ctl.Step(ctx, r.ex, id); err != nil || res.Sent {
				t.Fatalf("%s under a refused credential: sent %v, %v", id, res.Sent, err)
			}
			op, _ = r.store.OperationGet(ctx, id)
			if op.NextPollSource != pollwarden.DelayProviderIncident || op.HeldBy != incs[0].ID || op.StatusRequestsUsed != 0 {
				t.Fatalf("%s held: source %s, held by %q, requests %d", id, op.NextPollSource, op.HeldBy, op.StatusRequestsUsed)
			}
		}
		r.clock.Advance(30 * time.Second)
	}
	for i := 1; i < 4; i++ {
		if c := r.srv.Count(fmt.Sprintf("j%d", i)); c != 0 {
			t.Fatalf("the provider saw %d requests for j%d under the refused credential", c, i)
		}
	}
}

// A cancel asked for while an outage is open, when the probe is due,
// neither goes nor takes the probe's slot (its answer would not close the
// incident, so the slot would stay taken until its lease ends): it is
// refused at once naming the incident, and the next status request is the
// probe.
func TestCancelDuringAnOutageNeverTakesTheProbeSlot(t *testing.T) {
	r := newRig(t, "cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\n")
	ctx := context.Background()
	for i := range 6 {
		job := fmt.Sprintf("j%d", i)
		if i < 5 {
			r.srv.Script(job, fp.Code(503, nil), fp.State("running", nil))
		} else {
			r.srv.Script(job, fp.State("running", nil))
		}
		r.submit(fmt.Sprintf("op%d", i), job, policy.NewParams{})
	}
	for i := range 5 {
		if _, err := r.ctl.Step(ctx, r.ex, fmt.Sprintf("op%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	inc := openUnder(t, r)
	if inc == "" {
		t.Fatal("five failures opened no incident")
	}
	ks, err := r.store.KeyGet(ctx, "env:CTL_TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(ks.Incident.Open.NextProbeAt.Sub(r.clock.Now()) + time.Second) // the probe is due
	_, err = r.ctl.Cancel(ctx, r.ex, "op5", policy.DecisionParams{Actor: approver})
	if !errors.Is(err, pollwarden.ErrQuotaHeld) || !errors.Is(err, pollwarden.ErrIncidentHeld) ||
		!strings.Contains(err.Error(), "held by provider incident "+inc) || strings.Contains(err.Error(), "shared quota") {
		t.Fatalf("cancel during the outage: %v; want ErrIncidentHeld naming %s, not the shared quota", err, inc)
	}
	if r.srv.Cancels("j5") != 0 {
		t.Fatal("the cancel was sent during the outage")
	}
	if ks, _ := r.store.KeyGet(ctx, "env:CTL_TOKEN"); ks.Incident.Open == nil || ks.Incident.Open.ProbeOp != "" {
		t.Fatalf("after the cancel, the probe slot is %+v; want it free", ks.Incident.Open)
	}
	// The next status request due is the probe, and its answer closes it.
	op0, err := r.store.OperationGet(ctx, "op0")
	if err != nil {
		t.Fatal(err)
	}
	if d := op0.NextPollAt.Sub(r.clock.Now()); d > 0 {
		r.clock.Advance(d)
	}
	res, err := r.ctl.Step(ctx, r.ex, "op0")
	if err != nil || !res.Sent {
		t.Fatalf("the next status request: %+v, %v; want it sent as the probe", res, err)
	}
	if openUnder(t, r) != "" {
		t.Fatal("the probe's valid answer did not close the incident")
	}
}

// A cancel or a result fetch an incident holds is refused at once, in
// words that name the incident, not the shared quota; a quota's hold
// still names the key.
func TestHeldRequestNamesItsIncident(t *testing.T) {
	r := newRig(t, "")
	for _, what := range []string{"the cancel", "the result fetch"} {
		h := &quotaHeld{grant: pollwarden.KeyGrant{Until: r.clock.Now().Add(time.Second), Source: pollwarden.DelayProviderIncident,
			Incident: "inc-0123456789abcdef", Detail: "incident inc-0123456789abcdef: the provider is failing"}}
		err := r.ctl.waitQuota(context.Background(), h, what, "env:CTL_TOKEN")
		if !errors.Is(err, pollwarden.ErrQuotaHeld) || !strings.Contains(err.Error(), what+" is held by provider incident inc-0123456789abcdef") ||
			strings.Contains(err.Error(), "shared quota") {
			t.Errorf("%s held by an incident: %v", what, err)
		}
		h.grant.Source, h.grant.Until = pollwarden.DelaySharedQuota, r.clock.Now().Add(time.Hour)
		if err := r.ctl.waitQuota(context.Background(), h, what, "env:CTL_TOKEN"); !strings.Contains(err.Error(), what+" is held by the shared quota of env:CTL_TOKEN") {
			t.Errorf("%s held by the quota: %v", what, err)
		}
	}
}
