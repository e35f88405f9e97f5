package sim

import (
	"testing"
)

// TestFleetSharesOneQuotaAndOneIncident: in the fleet scenario the
// shared key (policy.KeyGrant and KeyNote on one row) never sends more
// than the provider's quota in any window and is never refused, and the
// outage reaches a person once (one incident); the policy alone runs over
// the quota, is refused, and escalates operation by operation; a
// per-process ceiling of quota/N stays under the quota but still
// escalates each operation in the outage.
func TestFleetSharesOneQuotaAndOneIncident(t *testing.T) {
	c := mustConfig(t, Fleet, 300, 3)
	rep := mustRun(t, c)
	alone, ceiling, shared := mustGet(t, rep, Pollwarden), mustGet(t, rep, FleetCeiling), mustGet(t, rep, FleetShared)
	if *shared.OverQuota != 0 || shared.Answers429 != 0 {
		t.Errorf("shared key: %d requests over the quota, %d 429s; want none", *shared.OverQuota, shared.Answers429)
	}
	if *shared.OutageNotifications != 1 || *shared.Incidents != 1 {
		t.Errorf("shared key: %d notifications for the outage, %d incidents; want one of each", *shared.OutageNotifications, *shared.Incidents)
	}
	if *alone.OverQuota == 0 || alone.Answers429 == 0 || *alone.OutageNotifications < 10 {
		t.Errorf("alone: %d over the quota, %d 429s, %d notifications for the outage; the scenario should press the quota and the outage",
			*alone.OverQuota, alone.Answers429, *alone.OutageNotifications)
	}
	if *ceiling.OverQuota != 0 || *ceiling.OutageNotifications < 10 {
		t.Errorf("ceiling: %d over the quota, %d notifications for the outage", *ceiling.OverQuota, *ceiling.OutageNotifications)
	}
	if shared.StoppedByLimit >= alone.StoppedByLimit {
		t.Errorf("shared key stopped %.2f of the jobs, alone %.2f: holding through the outage should stop fewer", shared.StoppedByLimit, alone.StoppedByLimit)
	}
}

// TestFleetStrategiesOnlyInTheFleet: the fleet's own strategies are
// refused by name in another scenario, where no quota exists to share.
func TestFleetStrategiesOnlyInTheFleet(t *testing.T) {
	for _, name := range []string{FleetCeiling, FleetShared, FleetOneOwner} {
		c := mustConfig(t, Herd, 10, 1)
		c.Strategies = []string{name}
		if _, err := Run(c); err == nil {
			t.Errorf("%s ran in the herd", name)
		}
	}
}
