package postgres

import (
	"context"
	"fmt"
	"time"
)

// StoreNow is the database's clock (pollwarden.StoreClock), the one that
// judges leases: every replica reads the same time whatever its own clock
// says.
func (s *Store) StoreNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}
