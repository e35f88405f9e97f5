package postgres

import (
	"fmt"
	"time"
)

// timeLayout is RFC 3339 with exactly nine fractional digits, always in
// UTC, as the SQLite driver stores times: fixed width, so byte order
// (COLLATE "C") is time order, and exact to the nanosecond, so a stored
// instant reads back time.Equal to the one written. timestamptz would keep
// only microseconds.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// checkTime rejects the years the fixed-width form cannot hold.
func checkTime(what string, t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("%s: year %d outside [0, 9999]", what, y)
	}
	return nil
}

// clampYear brings a bound outside the years the stored form holds to the
// nearest one it holds, so "due before the year 20000" means "everything".
func clampYear(t time.Time) time.Time {
	switch y := t.UTC().Year(); {
	case y < 0:
		return time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	case y > 9999:
		return time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	}
	return t
}

func formatTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return formatTime(*t)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}
