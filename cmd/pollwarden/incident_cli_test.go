package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestIncidentsCommand: the CLI lists the open incident a real serve
// opened (table and --json, with the operations it holds), refuses bad
// input with exit 2 and nothing changed, and its decide abandons every
// operation the incident holds, through the same use case as the API.
func TestIncidentsCommand(t *testing.T) {
	t.Parallel()
	r := newIncidentRig(t)
	run := func(args ...string) (*proc, int) {
		t.Helper()
		p := start(t, append(args, "--store", r.store)...)
		return p, p.exitCode(t)
	}
	p, code := run("incidents")
	if out := p.stdout.String(); code != 0 || !strings.Contains(out, r.id) || !strings.Contains(out, "credential") ||
		!strings.Contains(out, "open") || !strings.Contains(out, "HTTP 401") {
		t.Fatalf("incidents: exit %d\n%s%s", code, out, p.stderr.String())
	}
	p, code = run("incidents", "--open", "--json")
	var list []map[string]any
	if err := json.Unmarshal(p.stdout.Bytes(), &list); code != 0 || err != nil || len(list) != 1 ||
		list[0]["id"] != r.id || list[0]["held"] != float64(len(heldOps)) {
		t.Fatalf("incidents --open --json: exit %d, %v: %v\n%s", code, err, list, p.stderr.String())
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"incidents", "--limit", "0"}, "--limit"},
		{[]string{"incidents", "decide", r.id}, "--option is required"},
		{[]string{"incidents", "decide", r.id, "--option", "reboot", "--by", "alice"}, `option "reboot"`},
		{[]string{"incidents", "decide", "inc-0000000000000000", "--option", "abandon", "--by", "alice"}, `no incident "inc-0000000000000000"`},
		{[]string{"incidents", "decide", r.id, "--option", "retry_credential", "--by", "alice"}, "refused"},
	} {
		p, code := run(bad.args...)
		if code != 2 || !strings.Contains(p.stderr.String(), bad.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", bad.args, code, bad.want, p.stderr.String())
		}
	}
	// /metrics shows the open incident and the operations it holds, per key.
	m := scrape(t, r.base)
	if m[`pollwarden_incidents_open{key="env:PROC_TOKEN",kind="credential"}`] != 1 ||
		m[`pollwarden_incident_held_operations{key="env:PROC_TOKEN"}`] != float64(len(heldOps)) {
		t.Errorf("/metrics while the incident is open: open %v, held %v", m[`pollwarden_incidents_open{key="env:PROC_TOKEN",kind="credential"}`],
			m[`pollwarden_incident_held_operations{key="env:PROC_TOKEN"}`])
	}
	p, code = run("incidents", "decide", r.id, "--option", "abandon", "--by", "alice", "--note", "token revoked", "--json")
	var d struct {
		Incident map[string]any `json:"incident"`
		Applied  []string       `json:"applied"`
	}
	if err := json.Unmarshal(p.stdout.Bytes(), &d); code != 0 || err != nil || len(d.Applied) != len(heldOps)+1 || d.Incident["closed_at"] == nil {
		t.Fatalf("incidents decide: exit %d, %v: %+v\n%s", code, err, d, p.stderr.String())
	}
	for _, id := range append([]string{"ref-1"}, heldOps...) {
		op := call(t, r.base, "alice-token", "GET", "/v1/operations/"+id, "", 200)
		if op["phase"] == "waiting" || op["phase"] == "escalated" {
			t.Fatalf("%s after the CLI's abandon: %v", id, op["phase"])
		}
	}
	for series := range scrape(t, r.base) {
		if strings.HasPrefix(series, "pollwarden_incidents_open{") || strings.HasPrefix(series, "pollwarden_incident_held_operations{") {
			t.Errorf("/metrics after the incident closed still shows %s", series)
		}
	}
	if p, code := run("incidents", "decide", r.id, "--option", "abandon", "--by", "alice"); code != 2 || !strings.Contains(p.stderr.String(), "closed") {
		t.Errorf("a second decision: exit %d:\n%s", code, p.stderr.String())
	}
}
