package pollwarden

import (
	"context"
	"sync"
	"time"
)

// Clock is the only source of time for the controller, the scheduler and
// the doors. Tests pass a fake one so that a forty-minute wait runs in
// milliseconds; nothing else reads the wall clock. Its timers and tickers
// (the shape of tailscale's tstime.Clock) pace every re-check loop: the
// change feed's, the console's event stream, MCP's progress and phase
// watch, and the daemon's prune loop.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever is first.
	Sleep(ctx context.Context, d time.Duration) error
	// NewTimer fires once on the channel after d.
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// NewTicker fires on the channel every d.
	NewTicker(d time.Duration) (Ticker, <-chan time.Time)
}

// Timer is what NewTimer returns besides its channel: time.Timer's Stop
// and Reset.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker is what NewTicker returns besides its channel: time.Ticker's
// Stop and Reset.
type Ticker interface {
	Stop()
	Reset(d time.Duration)
}

// WallTimers gives a Clock the wall clock's timers and tickers: a fake
// clock that paces only what it sleeps (JumpClock, a test's fixed clock)
// embeds it, so its loops still tick in real time (or in a synctest
// bubble's).
type WallTimers struct{}

// NewTimer is time.NewTimer.
func (WallTimers) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

// NewTicker is time.NewTicker.
func (WallTimers) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	t := time.NewTicker(d)
	return t, t.C
}

// RealClock is the wall clock.
type RealClock struct{ WallTimers }

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
	// WallTimers: a JumpClock moves only when slept on, so the loops
	// that re-check on a ticker tick on the wall clock.
	WallTimers
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
