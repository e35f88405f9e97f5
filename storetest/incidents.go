package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// answer claims id under c's key at now and saves the answer obs with
// the key's lesson, as a controller does after a status request.
func answer(t *testing.T, s pollwarden.Store, c *pollwarden.ContractSpec, id string, status int, now time.Time) error {
	t.Helper()
	_, l, err := quotaClaim(t.Context(), s, c, id, "a", now)
	if err != nil {
		return err
	}
	if l == nil {
		return fmt.Errorf("claim of %s at %s was held", id, now.Sub(t0))
	}
	op := get(t, s, id)
	op.CompletedPolls++
	obs := pollwarden.Observation{Status: status, ReceivedAt: now}
	return s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l, Now: now, Release: true,
		Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: status}}},
		Quota: &pollwarden.QuotaNote{Key: pollwarden.QuotaKey(c), Note: func(ks *pollwarden.KeyState, now time.Time) *pollwarden.KeyState {
			next, _ := policy.KeyNote(ks, op, c, obs, now)
			return next
		}}})
}

// openIncident fails five operations under c's key with a 503, one
// second apart, each through another handle: the fifth save opens the
// incident.
func openIncident(t *testing.T, ss []pollwarden.Store, c *pollwarden.ContractSpec) *pollwarden.Incident {
	t.Helper()
	for i := range 5 {
		create(t, ss[0], newOp(fmt.Sprintf("op-%d", i)))
	}
	for i := range 5 {
		if err := answer(t, ss[i%len(ss)], c, fmt.Sprintf("op-%d", i), 503, at(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := ss[0].IncidentList(t.Context(), pollwarden.IncidentListParams{})
	if err != nil || len(list) != 1 {
		t.Fatalf("incidents after five failing operations: %+v, %v; want one", list, err)
	}
	return list[0]
}

// Five operations failing under one key open one incident, in the
// transaction of the fifth save: the record, the key's row and the
// incident_opened event together; the key then holds its other requests.
func testIncidentOpensWithTheSave(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	c := quotaContract(3600, time.Hour)
	inc := openIncident(t, ss, c)
	if !inc.Open() || inc.Kind != pollwarden.IncidentOutage || inc.What != "HTTP 503" || inc.Key != "env:SHARED" ||
		len(inc.Operations) != 5 || !inc.Since.Equal(t0) || !inc.OpenedAt.Equal(at(4*time.Second)) {
		t.Fatalf("incident = %+v", inc)
	}
	got, err := ss[1].IncidentGet(t.Context(), inc.ID)
	if err != nil || got.ID != inc.ID {
		t.Fatalf("IncidentGet: %+v, %v", got, err)
	}
	if ks, err := s.KeyGet(t.Context(), "env:SHARED"); err != nil || ks.Incident.Open == nil || ks.Incident.Open.ID != inc.ID || ks.Incident.Effects != nil {
		t.Fatalf("key row: %+v, %v", ks, err)
	}
	evs := verify(t, s, "op-4", 4)
	if e := evs[3]; e.Kind != pollwarden.EventIncidentOpened || e.Data.Incident != inc.ID {
		t.Fatalf("the fifth save's last event: %+v", e)
	}
	verifyStore(t, s)
	// Another operation under the key is held, and spends nothing.
	create(t, s, newOp("op-9"))
	if _, l, err := quotaClaim(t.Context(), ss[2], c, "op-9", "b", at(4500*time.Millisecond)); err != nil || l != nil {
		t.Fatalf("a claim under the open incident: lease %v, %v; want held", l, err)
	}
	if op := get(t, s, "op-9"); op.NextPollSource != pollwarden.DelayProviderIncident || op.StatusRequestsUsed != 0 {
		t.Fatalf("held record: source %s, requests %d", op.NextPollSource, op.StatusRequestsUsed)
	}
	if _, err := s.IncidentGet(t.Context(), "inc-none"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("IncidentGet of an unknown id: %v, want ErrNotFound", err)
	}
}

// A valid answer to the probe closes the incident in its save, with its
// last answer and an incident_closed event; a failed probe is counted.
func testIncidentClosedByTheProbe(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	c := quotaContract(3600, time.Hour)
	inc := openIncident(t, ss, c)
	ks, err := s.KeyGet(t.Context(), "env:SHARED")
	if err != nil {
		t.Fatal(err)
	}
	probe := ks.Incident.Open.NextProbeAt
	if err := answer(t, ss[1], c, "op-0", 502, probe); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.IncidentGet(t.Context(), inc.ID); got.Probes != 1 || got.LastProbe != "HTTP 502" || !got.Open() {
		t.Fatalf("after a failed probe: %+v", got)
	}
	ks, _ = s.KeyGet(t.Context(), "env:SHARED")
	if err := answer(t, ss[2], c, "op-1", 200, ks.Incident.Open.NextProbeAt); err != nil {
		t.Fatal(err)
	}
	got, err := s.IncidentGet(t.Context(), inc.ID)
	if err != nil || got.Open() || got.LastProbe != "HTTP 200" || got.ClosedBy == "" || got.What != "HTTP 503" || len(got.Operations) != 5 {
		t.Fatalf("after a valid probe answer: %+v, %v", got, err)
	}
	if ks, _ := s.KeyGet(t.Context(), "env:SHARED"); ks.Incident.Open != nil {
		t.Fatalf("the key still holds the closed incident: %+v", ks.Incident.Open)
	}
	evs := events(t, s, "op-1")
	if e := evs[len(evs)-1]; e.Kind != pollwarden.EventIncidentClosed || e.Data.Incident != inc.ID {
		t.Fatalf("the closing save's last event: %+v", e)
	}
	verifyStore(t, s)
}

// An approver's decision closes the open incident, clears the key and
// appends its event, in one transaction; a second is a conflict. The
// list shows open incidents first, then the newest.
func testIncidentDecide(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	c := quotaContract(3600, time.Hour)
	inc := openIncident(t, ss, c)
	d := pollwarden.DecisionRecord{Option: pollwarden.OptionAbandon, By: pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}, At: at(time.Minute), Outcome: "abandon"}
	p := pollwarden.IncidentDecideParams{ID: inc.ID, Decision: d, ClosedBy: "decision: abandon", Now: at(time.Minute), OperationID: "op-0",
		Events: []pollwarden.Event{{At: at(time.Minute), Kind: pollwarden.EventIncidentClosed, Data: pollwarden.EventData{Incident: inc.ID}}}}
	closed, err := ss[1].IncidentDecide(t.Context(), p)
	if err != nil || closed.Open() || closed.Decision == nil || closed.Decision.By.Name != "alice" || !closed.ClosedAt.Equal(at(time.Minute)) {
		t.Fatalf("decision: %+v, %v", closed, err)
	}
	if ks, _ := s.KeyGet(t.Context(), "env:SHARED"); ks.Incident.Open != nil {
		t.Fatalf("the key still holds the decided incident")
	}
	if evs := events(t, s, "op-0"); evs[len(evs)-1].Kind != pollwarden.EventIncidentClosed {
		t.Fatalf("no incident_closed event on op-0: %+v", evs[len(evs)-1])
	}
	if _, err := ss[2].IncidentDecide(t.Context(), p); !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("a second decision: %v, want ErrConflict", err)
	}
	p.ID = "inc-none"
	if _, err := s.IncidentDecide(t.Context(), p); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("a decision on an unknown incident: %v, want ErrNotFound", err)
	}
	verifyStore(t, s)
	// A later incident under another key, still open, lists first.
	other := quotaContract(3600, time.Hour)
	other.Status.Credential.Ref = "env:OTHER"
	for i := range 5 {
		id := fmt.Sprintf("other-%d", i)
		create(t, s, newOp(id))
		if err := answer(t, s, other, id, 500, at(time.Hour+time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.IncidentList(t.Context(), pollwarden.IncidentListParams{})
	if err != nil || len(list) != 2 || !list[0].Open() || list[0].Key != "env:OTHER" || list[1].ID != inc.ID {
		t.Fatalf("list: %+v, %v; want the open one first", list, err)
	}
	open, err := s.IncidentList(t.Context(), pollwarden.IncidentListParams{OpenOnly: true})
	if err != nil || len(open) != 1 || open[0].Key != "env:OTHER" {
		t.Fatalf("open list: %+v, %v", open, err)
	}
}
