package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pollwarden/pollwarden"
)

const incKey = "env:EXPORT_API_TOKEN"

func opNamed(t testing.TB, c *pollwarden.ContractSpec, id string) *pollwarden.Operation {
	op := newOp(t, c)
	op.ID = id
	return op
}

func failObs(status int) *pollwarden.Observation {
	if status == 0 {
		return &pollwarden.Observation{Transport: pollwarden.TransportTimeout}
	}
	return &pollwarden.Observation{Status: status}
}

// openOutage fails n distinct operations at one second apart.
func openOutage(t *testing.T, c *pollwarden.ContractSpec, n int) (pollwarden.IncidentState, []pollwarden.IncidentEffects) {
	t.Helper()
	var is pollwarden.IncidentState
	var fxs []pollwarden.IncidentEffects
	for i := range n {
		var fx pollwarden.IncidentEffects
		is, fx = NoteIncident(is, incKey, opNamed(t, c, fmt.Sprintf("op-%d", i)), c, failObs(503), t0.Add(time.Duration(i)*time.Second))
		fxs = append(fxs, fx)
	}
	return is, fxs
}

func TestIncidentOpensOnTheFifthDistinctOperation(t *testing.T) {
	c := testContract()
	is, fxs := openOutage(t, c, 5)
	for i, fx := range fxs[:4] {
		if fx.Opened != nil {
			t.Fatalf("failure %d opened an incident; only the fifth distinct operation does", i+1)
		}
	}
	inc := fxs[4].Opened
	if inc == nil || is.Open == nil || is.Open.ID != inc.ID {
		t.Fatalf("the fifth failure opened nothing: %+v %+v", fxs[4], is.Open)
	}
	if inc.Kind != pollwarden.IncidentOutage || inc.What != "HTTP 503" || !inc.Since.Equal(t0) || len(inc.Operations) != 5 || !strings.HasPrefix(inc.ID, "inc-") {
		t.Fatalf("incident = %+v", inc)
	}
}

func TestIncidentNeedsDistinctOperationsWithinTheWindow(t *testing.T) {
	c := testContract()
	var is pollwarden.IncidentState
	var fx pollwarden.IncidentEffects
	// One operation failing ten times is not an outage.
	for i := range 10 {
		is, fx = NoteIncident(is, incKey, opNamed(t, c, "same"), c, failObs(0), t0.Add(time.Duration(i)*time.Second))
		if fx.Opened != nil {
			t.Fatal("one operation's repeated failures opened an incident")
		}
	}
	// Four, then a fifth 61 s after the first: the first no longer counts.
	is = pollwarden.IncidentState{}
	for i := range 4 {
		is, _ = NoteIncident(is, incKey, opNamed(t, c, fmt.Sprintf("w%d", i)), c, failObs(502), t0.Add(time.Duration(i)*time.Second))
	}
	is, fx = NoteIncident(is, incKey, opNamed(t, c, "late"), c, failObs(502), t0.Add(61*time.Second))
	if fx.Opened != nil {
		t.Fatal("a failure older than the window counted")
	}
	// A valid answer in between forgets the failures.
	is = pollwarden.IncidentState{}
	for i := range 4 {
		is, _ = NoteIncident(is, incKey, opNamed(t, c, fmt.Sprintf("v%d", i)), c, failObs(500), t0)
	}
	is, _ = NoteIncident(is, incKey, opNamed(t, c, "ok"), c, &pollwarden.Observation{Status: 200}, t0)
	_, fx = NoteIncident(is, incKey, opNamed(t, c, "v4"), c, failObs(500), t0)
	if fx.Opened != nil {
		t.Fatal("failures before a valid answer counted")
	}
}

func TestIncidentRecentFailuresAreBounded(t *testing.T) {
	c := testContract()
	is := pollwarden.IncidentState{}
	// 4 distinct failing ops at a time never open; the bound holds with many.
	for i := range 1000 {
		is.Recent = remember(is.Recent, pollwarden.IncidentFailure{Op: fmt.Sprintf("op-%d", i), At: t0}, t0)
		if len(is.Recent) > MaxRecentFailures {
			t.Fatalf("%d failures kept, bound %d", len(is.Recent), MaxRecentFailures)
		}
	}
	_ = c
}

func TestIncidentOneProbeAtATime(t *testing.T) {
	c := testContract()
	is, _ := openOutage(t, c, 5)
	now := is.Open.NextProbeAt
	is, g := GrantIncident(is, opNamed(t, c, "a"), c, now)
	if !g.Send || !g.Probe {
		t.Fatalf("first look after the spacing: %+v, want the probe", g)
	}
	_, g2 := GrantIncident(is, opNamed(t, c, "b"), c, now.Add(time.Second))
	if g2.Send || g2.Until.IsZero() || !strings.Contains(g2.Detail, "probing") {
		t.Fatalf("second operation while the probe is out: %+v, want a hold", g2)
	}
	// The probe's holder died: the slot frees itself after ProbeLease.
	_, g3 := GrantIncident(is, opNamed(t, c, "b"), c, now.Add(ProbeLease))
	if !g3.Send || !g3.Probe {
		t.Fatalf("after the probe lease: %+v, want a new probe", g3)
	}
	// A failed probe frees the slot and spaces the next by backoff.
	is2, fx := NoteIncident(is, incKey, opNamed(t, c, "a"), c, failObs(503), now.Add(time.Second))
	if fx.Probed == nil || is2.Open.ProbeOp != "" || !is2.Open.NextProbeAt.After(now.Add(time.Second)) {
		t.Fatalf("failed probe: %+v %+v", fx, is2.Open)
	}
	if _, g := GrantIncident(is2, opNamed(t, c, "b"), c, now.Add(2*time.Second)); g.Send {
		t.Fatal("a probe went before the backoff spacing")
	}
	// A valid answer closes it.
	is3, fx := NoteIncident(is, incKey, opNamed(t, c, "a"), c, &pollwarden.Observation{Status: 200}, now.Add(time.Second))
	if fx.Closed == nil || is3.Open != nil || fx.Closed.ClosedAt == nil {
		t.Fatalf("a valid probe answer did not close: %+v", fx)
	}
}

func TestIncidentCredentialOpensAtOnceAndHoldsEveryone(t *testing.T) {
	c := testContract()
	ref := &pollwarden.RefusedCredential{Ref: incKey, MAC: "m"}
	is, fx := NoteIncident(pollwarden.IncidentState{}, incKey, opNamed(t, c, "a"), c,
		&pollwarden.Observation{Status: 401, RefusedCredential: ref}, t0)
	if fx.Opened == nil || fx.Opened.Kind != pollwarden.IncidentCredential || fx.Opened.Refused != ref {
		t.Fatalf("a 401 did not open a credential incident: %+v", fx)
	}
	for i := range 50 {
		_, g := GrantIncident(is, opNamed(t, c, fmt.Sprintf("o%d", i)), c, t0.Add(time.Duration(i)*time.Hour/100))
		if g.Send {
			t.Fatal("a request went under a refused credential")
		}
	}
	// Another 403 does not open a second one.
	if _, fx := NoteIncident(is, incKey, opNamed(t, c, "b"), c, &pollwarden.Observation{Status: 403}, t0); fx.Opened != nil {
		t.Fatal("a second refusal opened a second incident")
	}
}

func TestIncidentHoldNeverPassesTheDeadline(t *testing.T) {
	c := testContract()
	is, _ := NoteIncident(pollwarden.IncidentState{}, incKey, opNamed(t, c, "a"), c, &pollwarden.Observation{Status: 403}, t0)
	op := opNamed(t, c, "b")
	now := op.DeadlineAt.Add(-time.Second)
	_, g := GrantIncident(is, op, c, now)
	if g.Send || g.Until.After(op.DeadlineAt) {
		t.Fatalf("hold until %s past the deadline %s", g.Until, op.DeadlineAt)
	}
	// At the deadline, Gate (which runs first) escalates deadline_exceeded.
	held := op.Clone()
	held.NextPollAt, held.NextPollSource = g.Until, pollwarden.DelayProviderIncident
	if r := Gate(held, c, g.Until); r.Verdict != Stop || r.Op.Reason != pollwarden.ReasonDeadlineExceeded {
		t.Fatalf("gate at the deadline: %v %s", r.Verdict, r.Op.Reason)
	}
}

func TestIncidentResumeIsSpread(t *testing.T) {
	c := testContract()
	ks := pollwarden.NewKeyState(incKey) // the incident is over
	at := map[time.Time]int{}
	for i := range 200 {
		op := opNamed(t, c, fmt.Sprintf("held-%d", i))
		op.CompletedPolls = 3
		op.NextPollSource, op.HeldBy = pollwarden.DelayProviderIncident, "inc-x"
		_, g := KeyGrant(ks, op, c, t0)
		if g.OK || g.Source != pollwarden.DelayLocalBackoff || g.Until.Before(t0) {
			t.Fatalf("held op after the incident: %+v", g)
		}
		at[g.Until.Truncate(time.Second)]++
		op.NextPollSource = g.Source
		if _, again := KeyGrant(ks, op, c, g.Until); !again.OK {
			t.Fatalf("a resumed op was held again: %+v", again)
		}
	}
	for s, n := range at {
		if n > 40 {
			t.Fatalf("%d of 200 held operations resume in the second %s: a burst", n, s)
		}
	}
	if len(at) < 10 {
		t.Fatalf("200 held operations resume in only %d distinct seconds", len(at))
	}
}

// TestIncidentNeverTwoProbes: while an outage is open, whatever the
// operations and answers, at most one probe is out under the key at once
// (a probe is out from its grant until its answer or its lease's end).
func TestIncidentNeverTwoProbes(t *testing.T) {
	c := testContract()
	opened, _ := openOutage(t, c, 5)
	ops := make([]*pollwarden.Operation, 8)
	for i := range ops {
		ops[i] = opNamed(t, c, fmt.Sprintf("op-%d", i))
	}
	rapid.Check(t, func(rt *rapid.T) {
		is := opened.Clone()
		now := t0.Add(10 * time.Second)
		out := map[string]time.Time{} // probe op → lease end
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 90).Draw(rt, "dt")) * time.Second)
			for id, end := range out {
				if !now.Before(end) {
					delete(out, id)
				}
			}
			op := ops[rapid.IntRange(0, 7).Draw(rt, "op")]
			id := op.ID
			if rapid.Bool().Draw(rt, "ask") {
				var g IncidentGrant
				is, g = GrantIncident(is, op, c, now)
				if g.Probe {
					out[id] = now.Add(ProbeLease)
				}
				if g.Send && !g.Probe && is.Open != nil {
					rt.Fatalf("a non-probe request went while incident %s is open", is.Open.ID)
				}
			} else if _, probing := out[id]; probing {
				status := rapid.SampledFrom([]int{0, 500, 503}).Draw(rt, "answer")
				is, _ = NoteIncident(is, incKey, op, c, failObs(status), now)
				delete(out, id)
			}
			if len(out) > 1 {
				rt.Fatalf("%d probes out at once: %v", len(out), out)
			}
		}
	})
}

// TestKeyGrantHoldsForAnOpenIncident: the incident's check stands in
// front of the quota: a held request is answered provider_incident with
// the incident's id; the probe then takes the slot only when the quota
// grants it too.
func TestKeyGrantHoldsForAnOpenIncident(t *testing.T) {
	c := testContract()
	ks := pollwarden.NewKeyState(incKey)
	var fxs []pollwarden.IncidentEffects
	for i := range 5 {
		next, eff := KeyNote(ks, opNamed(t, c, fmt.Sprintf("op-%d", i)), c, pollwarden.Observation{Status: 503}, t0)
		if next != nil {
			ks = next
		}
		fxs = append(fxs, eff.Incident)
	}
	if fxs[4].Opened == nil || ks.Incident.Open == nil || ks.Incident.Effects == nil || ks.Incident.Effects.Opened == nil {
		t.Fatalf("KeyNote left no opened incident to write: %+v %+v", fxs[4], ks.Incident)
	}
	id := ks.Incident.Open.ID
	_, g := KeyGrant(ks, opNamed(t, c, "b"), c, t0.Add(time.Second))
	if g.OK || g.Source != pollwarden.DelayProviderIncident || g.Incident != id {
		t.Fatalf("a request under an open incident: %+v", g)
	}
	at := ks.Incident.Open.NextProbeAt
	probed, g := KeyGrant(ks, opNamed(t, c, "a"), c, at)
	if !g.OK || probed == nil || probed.Incident.Open.ProbeOp != "a" {
		t.Fatalf("the probe: %+v, row %+v", g, probed)
	}
	// The quota holds the probe: the slot stays free.
	q := testContract()
	q.Quota = &pollwarden.QuotaSpec{Requests: 1, Per: time.Hour}
	ks2 := *ks
	ks2.Next = at.Add(time.Hour)
	held, g := KeyGrant(&ks2, opNamed(t, q, "a"), q, at)
	if g.OK || g.Source == pollwarden.DelayProviderIncident || (held != nil && held.Incident.Open.ProbeOp != "") {
		t.Fatalf("a probe the quota holds: %+v, row %+v", g, held)
	}
}

// A submission or a result fetch under an open outage holds and never
// takes the probe's slot: only a status request's answer tells whether
// the provider is back.
func TestIncidentOnlyAStatusRequestProbes(t *testing.T) {
	c := testContract()
	is, _ := openOutage(t, c, 5)
	for _, ph := range []pollwarden.Phase{pollwarden.PhaseSubmitting, pollwarden.PhaseSucceeded} {
		op := opNamed(t, c, "x")
		op.Phase = ph
		next, g := GrantIncident(is, op, c, is.Open.NextProbeAt)
		if g.Send || next.Open.ProbeOp != "" {
			t.Fatalf("a %s request under the outage: %+v, slot %q", ph, g, next.Open.ProbeOp)
		}
	}
}

// A cancel (any request that is not a status request) of a polling
// operation holds under an open outage without taking the probe's slot,
// and once the incident is over it is not spread like a held status
// request: it goes to the quota at once.
func TestIncidentActionNeverProbes(t *testing.T) {
	c := testContract()
	is, _ := openOutage(t, c, 5)
	ks := pollwarden.NewKeyState("k")
	ks.Incident = is
	op := opNamed(t, c, "x")
	next, g := ActionGrant(ks, op, c, is.Open.NextProbeAt)
	if g.OK || g.Source != pollwarden.DelayProviderIncident || (next != nil && next.Incident.Open.ProbeOp != "") {
		t.Fatalf("a cancel under the outage, probe due: %+v, row %+v", g, next)
	}
	if _, g := KeyGrant(ks, op, c, is.Open.NextProbeAt); !g.OK {
		t.Fatalf("a status request with the probe due: %+v; want it to probe", g)
	}
	ks.Incident = pollwarden.IncidentState{}
	op.NextPollSource, op.HeldBy = pollwarden.DelayProviderIncident, is.Open.ID
	if _, g := ActionGrant(ks, op, c, is.Open.NextProbeAt); !g.OK {
		t.Fatalf("a cancel once the incident is over: %+v; want it to go", g)
	}
}
