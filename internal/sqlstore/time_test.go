package sqlstore

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestFormatTimeIsFormat: the stored form of a time (indexed columns that
// compare as text) is exactly time.Format's, for every year, zone and
// nanosecond.
func TestFormatTimeIsFormat(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("W", -(9*3600 + 30*60)), time.FixedZone("s", 59)}
	rapid.Check(t, func(t *rapid.T) {
		at := time.Date(rapid.OneOf(rapid.IntRange(1970, 2100), rapid.IntRange(-20, 10020)).Draw(t, "year"),
			time.Month(rapid.IntRange(1, 12).Draw(t, "month")), rapid.IntRange(1, 31).Draw(t, "day"),
			rapid.IntRange(0, 23).Draw(t, "h"), rapid.IntRange(0, 59).Draw(t, "m"), rapid.IntRange(0, 59).Draw(t, "s"),
			rapid.OneOf(rapid.Just(0), rapid.IntRange(0, 999999999)).Draw(t, "ns"), rapid.SampledFrom(zones).Draw(t, "zone"))
		if got, want := FormatTime(at), at.UTC().Format(layout); got != want {
			t.Fatalf("FormatTime(%v) = %s, want %s", at, got, want)
		}
	})
	if got := FormatTime(time.Time{}); got != "0001-01-01T00:00:00.000000000Z" {
		t.Fatalf("zero time: %s", got)
	}
}

func BenchmarkFormatTime(b *testing.B) {
	at := time.Date(2026, 12, 2, 7, 30, 1, 123456789, time.FixedZone("", 3600))
	b.Run("time.Format", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = at.UTC().Format(layout)
		}
	})
	b.Run("FormatTime", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = FormatTime(at)
		}
	})
}
