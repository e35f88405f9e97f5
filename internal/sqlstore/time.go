package sqlstore

import (
	"fmt"
	"time"
)

// layout is RFC 3339 with exactly nine fractional digits, always in UTC:
// fixed width, so text order is time order, and exact to the nanosecond,
// so a stored instant reads back time.Equal to the one written.
const layout = "2006-01-02T15:04:05.000000000Z07:00"

// FormatTime is t in the stored form: t.UTC().Format(layout), written
// digit by digit for the years the form holds, since a record's write
// formats four of its times and time.Format interprets the layout each
// time (it showed next to the record's encoding in profiles of a step).
// TestFormatTimeIsFormat holds the two equal.
func FormatTime(t time.Time) string {
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		return u.Format(layout)
	}
	hour, minute, sec := u.Clock()
	var b [len("2006-01-02T15:04:05.000000000Z")]byte
	digits(b[0:4], year)
	b[4] = '-'
	digits(b[5:7], int(month))
	b[7] = '-'
	digits(b[8:10], day)
	b[10] = 'T'
	digits(b[11:13], hour)
	b[13] = ':'
	digits(b[14:16], minute)
	b[16] = ':'
	digits(b[17:19], sec)
	b[19] = '.'
	digits(b[20:29], u.Nanosecond())
	b[29] = 'Z'
	return string(b[:])
}

// digits writes n into b in decimal, zero-padded to b's length.
func digits(b []byte, n int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}

// formatTimePtr is FormatTime, or nil (SQL NULL) for a nil time.
func formatTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return FormatTime(*t)
}

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

// parseTime reads a stored time.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}
