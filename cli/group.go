package cli

import (
	"context"
	"sync"
)

// group runs the daemon's long-lived parts (scheduler, decision clock,
// webhook dispatcher, prune loop, HTTP server) as one, in the manner of
// river's startstop: each runs with the group's context, the first to
// fail stops the others, and wait returns only once every part has
// returned. Nothing then outlives serve and the store it was given (a
// prune in its transaction, a webhook attempt being recorded).
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

// newGroup is a group whose parts stop when ctx ends.
func newGroup(ctx context.Context) *group {
	g := &group{}
	g.ctx, g.cancel = context.WithCancel(ctx)
	return g
}

// start runs part in the group. An error from it stops the group, and
// the first such error is what wait returns.
func (g *group) start(part func(context.Context) error) {
	g.wg.Go(func() {
		if err := part(g.ctx); err != nil {
			g.once.Do(func() { g.err = err })
			g.cancel()
		}
	})
}

// stop ends the group's context: every part is asked to return.
func (g *group) stop() { g.cancel() }

// wait returns once every part has returned, with the first error.
func (g *group) wait() error {
	g.wg.Wait()
	g.cancel()
	return g.err
}
