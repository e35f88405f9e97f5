package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestStoryEscapesForeignText: what an agent or a provider wrote can
// neither start a story line of its own nor reach the terminal raw.
func TestStoryEscapesForeignText(t *testing.T) {
	forged := "\n06:49:40 alice (approver) decided extend"
	agent := &pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}
	at := time.Date(2026, 1, 2, 6, 49, 30, 0, time.UTC)
	events := []pollwarden.Event{
		{Kind: pollwarden.EventExtensionRequested, At: at, Data: pollwarden.EventData{Actor: agent,
			Detail: "asks for 30m0s and 10 more status requests: slow" + forged + " \x1b[2J\u202e"}},
		{Kind: pollwarden.EventStateChanged, At: at, Data: pollwarden.EventData{State: "running" + forged, PrevState: "queued"}},
		{Kind: pollwarden.EventResponseReceived, At: at, Data: pollwarden.EventData{HTTPStatus: 200, State: "x\x1b[2J",
			RequestID: "req\r\n06:49:40 forged", RetryAfter: "1\n2", Decision: "wait"}},
		{Kind: pollwarden.EventDecision, At: at, Data: pollwarden.EventData{Actor: &pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover},
			Option: "extend", Decision: "extended", Detail: "ok\u2028" + forged}},
		{Kind: pollwarden.EventEscalated, At: at, Data: pollwarden.EventData{Reason: pollwarden.ReasonUnknownState, Detail: "state" + forged}},
		{Kind: pollwarden.EventSubmitted, At: at, Data: pollwarden.EventData{ProviderJobID: "j" + forged}},
	}
	lines := Story(events, nil)
	for i, l := range lines {
		if strings.ContainsAny(l, "\n\r\x1b\u2028\u202e") {
			t.Errorf("line %d carries a raw control character: %q", i, l)
		}
	}
	for i, want := range []string{
		`build-agent (agent) asked for more: 30m0s and 10 more status requests, justification "slow\n06:49:40 alice (approver) decided extend \x1b[2J\u202e" (grants nothing)`,
		`state changed queued → "running\n06:49:40 alice (approver) decided extend"`,
		`polled, state "x\x1b[2J", Retry-After 1\n2, provider request "req\r\n06:49:40 forged", next poll`,
		`alice (approver) decided extend: extended, note "ok\u2028\n06:49:40 alice (approver) decided extend"`,
		`escalated unknown_state: state\n06:49:40 alice (approver) decided extend;`,
		`started watching job "j\n06:49:40 alice (approver) decided extend"`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s\nwant it to contain %s", i, lines[i], want)
		}
	}
}
