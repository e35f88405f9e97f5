package changes

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestChangesNeverBlock: Publish is the controller's OnChange and must not
// block, even for a subscriber that never reads; signals coalesce.
func TestChangesNeverBlock(t *testing.T) {
	c := NewFeed()
	sig, stop := c.Subscribe("a")
	other, stopOther := c.Subscribe("b")
	defer stopOther()
	done := make(chan struct{})
	go func() {
		for range 1000 {
			c.Publish(&pollwarden.Operation{ID: "a"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
	select {
	case <-sig:
	default:
		t.Fatal("no signal after 1000 changes")
	}
	select {
	case <-sig:
		t.Fatal("signals did not coalesce")
	default:
	}
	select {
	case <-other:
		t.Fatal("a change of a woke the subscriber of b")
	default:
	}
	stop()
	if n := c.Watched(); n != 1 {
		t.Errorf("%d ids with subscribers after stop, want 1", n)
	}
	stopOther()
	if n := c.Watched(); n != 0 {
		t.Errorf("%d ids with subscribers, want 0", n)
	}
	var nilFeed *Feed
	nilFeed.Publish(&pollwarden.Operation{ID: "a"})
	c.Publish(nil)
}

// TestChangesSubscribeAll: a subscriber to every operation hears a change
// of any one, and stops hearing after its stop.
func TestChangesSubscribeAll(t *testing.T) {
	c := NewFeed()
	sig, stop := c.SubscribeAll()
	c.Publish(&pollwarden.Operation{ID: "a"})
	c.Publish(&pollwarden.Operation{ID: "b"})
	select {
	case <-sig:
	default:
		t.Fatal("no signal for a change of a and b")
	}
	stop()
	c.Publish(&pollwarden.Operation{ID: "c"})
	select {
	case <-sig:
		t.Fatal("a signal after stop")
	default:
	}
}
