// Package changes carries the controller's "this operation changed"
// signal to whoever waits on it: an API long-poll, an MCP wait_job or
// resource subscription. It is its own package so that each door can
// listen without importing another.
package changes

import (
	"context"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Feed tells long-polls that an operation changed. Pass its Publish as
// controller.Options.OnChange: the controller calls it after every saved
// change, so a waiting GET answers within milliseconds of a phase change
// instead of on its next look at the store. It is safe for concurrent use.
type Feed struct {
	mu   sync.Mutex
	subs map[string]map[*subscription]struct{}
	// all are the subscribers to every operation (a console's queue).
	all map[*subscription]struct{}
}

type subscription struct{ ch chan struct{} }

// NewFeed returns a broadcaster with no subscribers.
func NewFeed() *Feed {
	return &Feed{subs: map[string]map[*subscription]struct{}{}, all: map[*subscription]struct{}{}}
}

// Publish signals every subscriber of op.ID. It never blocks: a subscriber
// that has not yet looked at the last signal keeps just one, since all it
// does with a signal is re-read the record.
func (c *Feed) Publish(op *pollwarden.Operation) {
	if c == nil || op == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.subs[op.ID] {
		s.signal()
	}
	for s := range c.all {
		s.signal()
	}
}

func (s *subscription) signal() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// SubscribeAll is Subscribe for a change of any operation: a list of
// operations (the console's queue) re-reads itself on a signal.
func (c *Feed) SubscribeAll() (<-chan struct{}, func()) {
	s := &subscription{ch: make(chan struct{}, 1)}
	c.mu.Lock()
	c.all[s] = struct{}{}
	c.mu.Unlock()
	return s.ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.all, s)
	}
}

// Subscribe returns a channel that receives after each change of
// operation id (several changes may arrive as one signal), and a function
// that ends the subscription. Subscribe before reading the record, so that
// a change between the read and the wait is not missed.
func (c *Feed) Subscribe(id string) (<-chan struct{}, func()) {
	s := &subscription{ch: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.subs[id] == nil {
		c.subs[id] = map[*subscription]struct{}{}
	}
	c.subs[id][s] = struct{}{}
	c.mu.Unlock()
	return s.ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs[id], s)
		if len(c.subs[id]) == 0 {
			delete(c.subs, id)
		}
	}
}

// Watched counts the operations someone is subscribed to: a door's tests
// read it to know a long-poll is listening, and it shows that ended waits
// leave nothing behind.
func (c *Feed) Watched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

// WaitPhase returns operation id once its phase differs from the one it
// had when WaitPhase was called, or when d has passed, or at once when the
// phase is finished (nothing could change it). Signals come from Publish;
// every recheck it also re-reads the store, so a change made by another
// process (a CLI decide, another replica) is seen too, only later.
//
// clk paces the wait and the rechecks (the application's Clock).
func (c *Feed) WaitPhase(ctx context.Context, clk pollwarden.Clock, st pollwarden.Store, id string, d, recheck time.Duration) (*pollwarden.Operation, error) {
	signal, stop := c.Subscribe(id)
	defer stop()
	op, err := st.OperationGet(ctx, id)
	if err != nil || d <= 0 || op.Phase.Finished() {
		return op, err
	}
	start := op.Phase
	timeout, timedOut := clk.NewTimer(d)
	defer timeout.Stop()
	tick, ticks := clk.NewTicker(recheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return op, ctx.Err()
		case <-timedOut:
			return st.OperationGet(ctx, id)
		case <-signal:
		case <-ticks:
		}
		next, err := st.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		op = next
		if op.Phase != start {
			return op, nil
		}
	}
}
