package operations

import (
	"context"
	"time"

	"github.com/pollwarden/pollwarden"
)

// What the doors read of the one Service their process built: its clock,
// its contracts, its change signals. A door holds nothing else of the
// core, so two doors of one process can never see different ones.

// Clock is the clock the service resolves deadlines with; doors time
// requests and tell ages with it too.
func (s *Service) Clock() pollwarden.Clock { return s.o.Clock }

// Recheck is how often a wait re-reads the store besides the change
// signals, to see changes made by other processes.
func (s *Service) Recheck() time.Duration { return s.o.Recheck }

// Contracts is the contracts the service creates and decides under.
func (s *Service) Contracts() Contracts { return s.o.Contracts }

// Subscribe signals every change of operation id made in this process;
// stop ends it. A signal carries nothing: read the record through Get.
func (s *Service) Subscribe(id string) (<-chan struct{}, func()) { return s.o.Changes.Subscribe(id) }

// SubscribeAll signals every change of any operation made in this process.
func (s *Service) SubscribeAll() (<-chan struct{}, func()) { return s.o.Changes.SubscribeAll() }

// writeProber is a store that can show it accepts a write without
// changing anything (sqlite.Store and postgres.Store).
type writeProber interface {
	ProbeWrite(ctx context.Context) error
}

// Ready reports whether the store accepts a write now, changing nothing;
// a store without a write probe must at least answer a read.
func (s *Service) Ready(ctx context.Context) error {
	if p, ok := s.store.(writeProber); ok {
		return p.ProbeWrite(ctx)
	}
	_, _, err := s.store.AuditHead(ctx)
	return err
}
