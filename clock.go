package pollwarden

import (
	"context"
	"sync"
	"time"
)

// Clock is the only source of time for the controller, the scheduler and
// the doors. Tests pass a fake one so that a forty-minute wait runs in
// milliseconds; nothing else reads the wall clock.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever is first.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer, returning ctx.Err() if the context ends first.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// JumpClock stands still until slept on, then jumps forward by the sleep:
// a wait takes no time and every time it reports follows from its start.
// `pollwarden demo`, the examples and tests use it; an embedder's tests
// can too.
type JumpClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewJumpClock starts a JumpClock at start.
func NewJumpClock(start time.Time) *JumpClock { return &JumpClock{now: start} }

// Now returns the clock's current time.
func (c *JumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock forward by d (nothing for d <= 0) and returns at
// once, with ctx.Err() if the context has ended.
func (c *JumpClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(max(d, 0))
	c.mu.Unlock()
	return ctx.Err()
}
