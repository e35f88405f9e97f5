package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// The incident gauges: one open series per key and kind, the held
// operations summed per key, nothing for a key with no open incident,
// and names and help that pass the Prometheus linter.
func TestIncidentGaugesPerKey(t *testing.T) {
	reg := prometheus.NewRegistry()
	gauges := []operations.IncidentGauge{
		{Key: "env:A", Kind: pollwarden.IncidentOutage, Held: 12},
		{Key: "env:B", Kind: pollwarden.IncidentCredential, Held: 3},
		{Key: "env:B", Kind: pollwarden.IncidentOutage, Held: 4},
	}
	RegisterIncidents(reg, func(context.Context) ([]operations.IncidentGauge, error) { return gauges, nil })
	want := `
# HELP pollwarden_incident_held_operations Operations an open provider incident holds now, by quota key (each incident's count stops at 10000).
# TYPE pollwarden_incident_held_operations gauge
pollwarden_incident_held_operations{key="env:A"} 12
pollwarden_incident_held_operations{key="env:B"} 7
# HELP pollwarden_incidents_open Open provider incidents, by quota key and kind (outage, credential), read from the store at scrape time.
# TYPE pollwarden_incidents_open gauge
pollwarden_incidents_open{key="env:A",kind="outage"} 1
pollwarden_incidents_open{key="env:B",kind="credential"} 1
pollwarden_incidents_open{key="env:B",kind="outage"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pollwarden_incidents_open", "pollwarden_incident_held_operations"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	gauges = nil
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("with no open incident: %d series, %v; want none", n, err)
	}
}

// A store that cannot be read makes the scrape say so, not show zero.
func TestIncidentGaugesStoreError(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterIncidents(reg, func(context.Context) ([]operations.IncidentGauge, error) { return nil, errors.New("store down") })
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("gather with the store down: %v", err)
	}
}
