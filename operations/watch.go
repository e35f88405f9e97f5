package operations

import (
	"context"
	"time"

	"github.com/pollwarden/pollwarden"
)

// PhaseWatch follows one operation's phase for a subscriber (MCP's
// resource subscriptions): change signals come at once from this
// process, and the store is re-read every Recheck, so a change made by
// another process is seen too.
type PhaseWatch struct {
	s      *Service
	id     string
	phase  pollwarden.Phase
	signal <-chan struct{}
	unsub  func()
	tick   pollwarden.Ticker
	ticks  <-chan time.Time
}

// WatchPhase reads operation id for c and follows its phase from there.
// The caller is checked once, here: an owner never changes. Stop it when
// done.
func (s *Service) WatchPhase(ctx context.Context, c Caller, id string) (*PhaseWatch, error) {
	// Signals first, then the phase they are compared with: a change
	// between the two is then a signal, not a miss.
	signal, unsub := s.o.Changes.Subscribe(id)
	op, err := s.visible(ctx, c, id)
	if err != nil {
		unsub()
		return nil, err
	}
	tick, ticks := s.o.Clock.NewTicker(s.o.Recheck)
	return &PhaseWatch{s: s, id: id, phase: op.Phase, signal: signal, unsub: unsub, tick: tick, ticks: ticks}, nil
}

// Next waits for the phase to change (true) or for a re-read that found
// none (false), so the subscriber can check it is still wanted; it
// returns ctx's error when ctx ends.
func (w *PhaseWatch) Next(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-w.signal:
	case <-w.ticks:
	}
	op, err := w.s.store.OperationGet(ctx, w.id)
	if err != nil || op.Phase == w.phase {
		return false, nil // a read that fails now is tried again on the next signal
	}
	w.phase = op.Phase
	return true, nil
}

// Stop ends the watch.
func (w *PhaseWatch) Stop() {
	w.tick.Stop()
	w.unsub()
}

// phaseCounter is a store that counts operations by phase in one query
// (sqlite.Store and postgres.Store).
type phaseCounter interface {
	OperationCounts(ctx context.Context) (map[pollwarden.Phase]int, error)
}

// PhaseCounts counts the operations of the store by phase, for no caller:
// the metrics gauges, which name no operation. A store shared by several
// processes is the only place that knows them all. A store that cannot
// count is listed whole, which only a test's store should be.
func (s *Reader) PhaseCounts(ctx context.Context) (map[pollwarden.Phase]int, error) {
	if c, ok := s.store.(phaseCounter); ok {
		return c.OperationCounts(ctx)
	}
	ops, err := s.store.OperationList(ctx, pollwarden.ListParams{})
	if err != nil {
		return nil, err
	}
	counts := map[pollwarden.Phase]int{}
	for _, op := range ops {
		counts[op.Phase]++
	}
	return counts, nil
}
