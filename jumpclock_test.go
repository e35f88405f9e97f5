package pollwarden_test

import (
	"context"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestJumpClock: time stands still until a sleep, which moves it by
// exactly the sleep (never back), and a sleep on an ended context says so.
func TestJumpClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 10, 20, 0, 0, time.UTC)
	c := pollwarden.NewJumpClock(start)
	if err := c.Sleep(t.Context(), 90*time.Second); err != nil || !c.Now().Equal(start.Add(90*time.Second)) {
		t.Fatalf("after a 90 s sleep: %v at %v", err, c.Now())
	}
	c.Sleep(t.Context(), -time.Hour)
	if !c.Now().Equal(start.Add(90 * time.Second)) {
		t.Fatalf("a negative sleep moved the clock to %v", c.Now())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Sleep(ctx, time.Second); err == nil {
		t.Fatal("a sleep on an ended context returned nil")
	}
}
