package policy_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// fleetStep is one operation's next request in a simulated fleet.
type fleetStep struct {
	at time.Time
	op *pollwarden.Operation
}

// runFleet simulates ops that always have a request to make: a granted
// one asks again after think, a held one comes back exactly at the slot
// it was promised. It returns the grants' times up to end.
func runFleet(t *testing.T, c *pollwarden.ContractSpec, ops []*pollwarden.Operation, think time.Duration, end time.Time) []time.Time {
	t.Helper()
	ks := pollwarden.NewKeyState("k")
	queue := make([]fleetStep, 0, len(ops))
	for i, op := range ops {
		queue = append(queue, fleetStep{quotaT0.Add(time.Duration(i) * time.Millisecond), op})
	}
	var grants []time.Time
	for len(queue) > 0 {
		slices.SortStableFunc(queue, func(a, b fleetStep) int { return a.at.Compare(b.at) })
		s := queue[0]
		queue = queue[1:]
		if !s.at.Before(end) {
			break
		}
		g := take(&ks, s.op, c, s.at)
		if g.OK {
			grants = append(grants, s.at)
			queue = append(queue, fleetStep{s.at.Add(think), s.op})
			continue
		}
		if g.Until.Before(s.at) {
			t.Fatalf("held until %s, before now %s", g.Until, s.at)
		}
		queue = append(queue, fleetStep{g.Until, s.op})
	}
	return grants
}

// The quota is work-conserving: with two owners' operations always
// asking, and each held one coming back at the slot it was promised,
// every slot of the quota is used (none left free because a waiter
// promised a later slot, or already served, still "ranks ahead").
func TestKeyGrantUsesEverySlotAcrossOwners(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners []string
		prios  []int
	}{
		{"two owners", []string{"alice", "bob"}, []int{5}},
		{"four owners", []string{"a", "b", "c", "d"}, []int{5}},
		{"two owners, two priorities", []string{"alice", "bob"}, []int{2, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := quotaContract(10, time.Second) // a slot every 100 ms
			var ops []*pollwarden.Operation
			for i := range 3 {
				for _, o := range tc.owners {
					for _, p := range tc.prios {
						ops = append(ops, quotaOp(fmt.Sprint(o, p, i), o, p))
					}
				}
			}
			start, end := quotaT0.Add(time.Second), quotaT0.Add(6*time.Second)
			grants := runFleet(t, c, ops, 10*time.Millisecond, end)
			n := 0
			for _, g := range grants {
				if !g.Before(start) {
					n++
				}
			}
			// 5 windows of 10; one slot of slack for where the
			// windows' edges fall.
			if n < 49 {
				t.Fatalf("%d grants in 5 windows of a quota of 10/s: slots left unused", n)
			}
		})
	}
}

// A free slot is not left unused for a more deserving waiter promised a
// later slot: it goes to whoever asks; only a waiter due now (its slot
// come, within the grace) keeps it.
func TestKeyGrantFreeSlotNotKeptForALaterWaiter(t *testing.T) {
	c := quotaContract(60, time.Minute) // one a second
	row := func(due time.Time) *pollwarden.KeyState {
		ks := pollwarden.NewKeyState("k")
		ks.Requests, ks.Per, ks.WindowStart, ks.WindowUsed = 60, time.Minute, quotaT0, 1
		ks.Next = quotaT0.Add(time.Second)
		ks.Granted = []pollwarden.KeyOwnerCount{{Owner: "alice", Count: 1}}
		// Bob, granted fewer, has two waiting, promised 4 s and 5 s.
		ks.Waiting = []pollwarden.KeyWaiter{{Priority: 5, Owner: "bob", Count: 2, Until: quotaT0.Add(5*time.Second + policy.WaiterGrace), Due: due}}
		return ks
	}
	for _, tc := range []struct {
		name string
		due  time.Time
	}{{"bob due at 4 s", quotaT0.Add(4 * time.Second)}, {"a row without due (read as the latest promise)", time.Time{}}} {
		t.Run(tc.name, func(t *testing.T) {
			ks := row(tc.due)
			if g := take(&ks, quotaOp("a1", "alice", 5), c, quotaT0.Add(time.Second)); !g.OK {
				t.Fatalf("alice at the free slot of 1 s, bob promised later: held %+v", g)
			}
		})
	}
	ks := row(quotaT0.Add(4 * time.Second))
	if g := take(&ks, quotaOp("a1", "alice", 5), c, quotaT0.Add(4*time.Second)); g.OK {
		t.Fatal("alice took the slot of 4 s that bob (granted fewer) is due for")
	}
}
