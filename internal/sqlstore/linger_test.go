package sqlstore

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestGatherWaitsOnlyForWritersInFlight checks the bound of the linger
// before a group (gather) on the bubble's fake clock: a group waits for
// as many writes as were in flight when the one before ended, at most
// linger after that end; a write long after the last group, or after a
// group of one, is taken at once; a dialect without linger never waits.
func TestGatherWaitsOnlyForWritersInFlight(t *testing.T) {
	const linger = time.Millisecond
	ended := func(g *grouper, inFlight int, at time.Time) {
		g.mu.Lock()
		g.expect, g.lastEnd = inFlight, at
		g.mu.Unlock()
	}
	took := func(g *grouper) time.Duration {
		start := time.Now()
		g.gather()
		return time.Since(start)
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGrouper(1, linger)
		g.queue(&groupedWrite{})
		ended(g, 3, time.Now())
		if d := took(g); d != linger {
			t.Errorf("one write of three in flight: waited %v, want the bound %v", d, linger)
		}
		if n := g.lingered.Load(); n != 1 {
			t.Errorf("lingered = %d, want 1", n)
		}

		ended(g, 3, time.Now())
		go func() {
			time.Sleep(linger / 4)
			g.queue(&groupedWrite{})
			time.Sleep(linger / 4)
			g.queue(&groupedWrite{})
		}()
		if d := took(g); d != linger/2 {
			t.Errorf("the other two back after %v: waited %v", linger/2, d)
		}

		g = newGrouper(1, linger)
		g.queue(&groupedWrite{})
		ended(g, 1, time.Now())
		if d := took(g); d != 0 {
			t.Errorf("after a group of one: waited %v, want none", d)
		}
		ended(g, 20, time.Now().Add(-2*linger))
		if d := took(g); d != 0 {
			t.Errorf("long after the last group: waited %v, want none", d)
		}

		g = newGrouper(inFlight, 0)
		g.queue(&groupedWrite{})
		ended(g, 20, time.Now())
		if d := took(g); d != 0 || g.lingered.Load() != 0 {
			t.Errorf("without linger (PostgreSQL): waited %v", d)
		}
	})
}
