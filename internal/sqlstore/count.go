package sqlstore

import (
	"context"

	"github.com/pollwarden/pollwarden"
)

// OperationCounts counts the operations by phase in one grouped query
// over the phase index, for the metrics gauges: a scrape must not read
// and decode every record of a fleet to count them.
func (s *Store) OperationCounts(ctx context.Context) (map[pollwarden.Phase]int, error) {
	rows, err := s.d.Reader().Query(ctx, "SELECT phase, count(*) FROM operations GROUP BY phase")
	if err != nil {
		return nil, s.fail(err, "count operations")
	}
	defer rows.Close()
	counts := map[pollwarden.Phase]int{}
	for rows.Next() {
		var phase string
		var n int64
		if err := rows.Scan(&phase, &n); err != nil {
			return nil, s.fail(err, "count operations")
		}
		counts[pollwarden.Phase(phase)] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err, "count operations")
	}
	return counts, nil
}
