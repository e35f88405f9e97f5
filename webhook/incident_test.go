package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/mailsink"
	"github.com/pollwarden/pollwarden/policy"
)

// answerUnder saves op's answer status with its key's lesson, as the
// controller does: the fifth failing operation opens an incident.
func (r *notifyRig) answerUnder(t *testing.T, op *pollwarden.Operation, status int) {
	t.Helper()
	c := &pollwarden.ContractSpec{Name: "c", Backoff: pollwarden.Backoff{Base: time.Second, Max: time.Minute},
		Status: pollwarden.StatusCall{Credential: &pollwarden.Credential{Header: "Authorization", Ref: "env:TOKEN"}}}
	now := r.clk.Now()
	obs := pollwarden.Observation{Status: status, ReceivedAt: now}
	err := r.st.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: now,
		Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: status}}},
		Quota: &pollwarden.QuotaNote{Key: pollwarden.QuotaKey(c), Note: func(ks *pollwarden.KeyState, at time.Time) *pollwarden.KeyState {
			next, _ := policy.KeyNote(ks, op, c, obs, at)
			return next
		}}})
	if err != nil {
		t.Fatal(err)
	}
}

// One incident makes one incident.opened message per endpoint (one
// Slack post, one e-mail, for five failing operations) and one
// incident.closed for the signed endpoint only; no secret in any.
func TestIncidentIsOneNotification(t *testing.T) {
	r := newNotifyRig(t, &SMTP{From: "pollwarden@example.com", To: []string{"oncall@example.com"},
		Username: "pollwarden", Password: "env:SMTP_PW"}, mailsink.Options{User: "pollwarden", Password: smtpCanary})
	var ops []*pollwarden.Operation
	for i := range 6 {
		ops = append(ops, r.create(t, fmt.Sprintf("op-%d", i)))
	}
	if err := r.d.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops[:5] {
		r.answerUnder(t, op, 503)
		r.clk.Add(time.Second)
	}
	if n := r.tick(t, r.d); n != 3 {
		t.Fatalf("%d attempts after the incident opened, want one per endpoint", n)
	}
	r.answerUnder(t, ops[5], 200) // the provider answers again: closed
	r.tick(t, r.d)
	for _, m := range r.outbox(t, "") {
		noCanary(t, "stored body for "+m.Endpoint, m.Body)
		if m.Status != pollwarden.OutboxDelivered {
			t.Fatalf("%s: %s, %s", m.Endpoint, m.Status, m.LastError)
		}
	}
	hits := r.std.got()
	if len(hits) != 2 {
		t.Fatalf("the signed endpoint got %d messages, want opened and closed", len(hits))
	}
	var opened, closed IncidentBody
	if err := json.Unmarshal(hits[0].body, &opened); err != nil || json.Unmarshal(hits[1].body, &closed) != nil {
		t.Fatalf("bodies: %s / %s", hits[0].body, hits[1].body)
	}
	if opened.Type != "incident.opened" || opened.Data.Kind != pollwarden.IncidentOutage || opened.Data.What != "HTTP 503" ||
		len(opened.Data.Operations) != 5 || opened.Data.Key != "env:TOKEN" || !hits[0].valid {
		t.Fatalf("incident.opened: %s", hits[0].body)
	}
	if closed.Type != "incident.closed" || closed.Data.ID != opened.Data.ID || closed.Data.ClosedAt == nil || closed.Data.LastProbe != "HTTP 200" {
		t.Fatalf("incident.closed: %s", hits[1].body)
	}
	_, posts := r.slack.got()
	if len(posts) != 1 {
		t.Fatalf("%d Slack posts for one incident, want 1", len(posts))
	}
	_, texts, buttons := slackTexts(t, posts[0])
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Provider incident under env:TOKEN: HTTP 503 (outage)", "*Operations*\n5 failed together", "(`abandon`)"} {
		if !strings.Contains(all, want) {
			t.Fatalf("Slack message lacks %q:\n%s", want, all)
		}
	}
	if len(buttons) != 1 || buttons[0] != "https://pollwarden.example/ui/incidents/"+opened.Data.ID {
		t.Fatalf("buttons %v, want the incident's page", buttons)
	}
	if got := r.sink.Mail(); len(got) != 1 {
		t.Fatalf("%d e-mails for one incident, want 1", len(got))
	}
}
