package pollwarden

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckOperationID(t *testing.T) {
	for _, id := range []string{"a", "op-1", "A_b.c~d", "-x", strings.Repeat("a", 128)} {
		if err := CheckOperationID("operation_id", id); err != nil {
			t.Errorf("%q refused: %v", id, err)
		}
	}
	for _, id := range []string{"", "..", ".a", "a b", "a/b", "a\x00", "é", "a\xff", strings.Repeat("a", 129)} {
		err := CheckOperationID("--operation-id", id)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--operation-id") {
			t.Errorf("%q: %v, want ErrInvalid naming the field", id, err)
		}
	}
}

func TestParseDeadline(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"40m":                       now.Add(40 * time.Minute),
		"2026-12-01T12:00:00Z":      now.Add(2 * time.Hour),
		"2026-12-01T13:00:00+02:00": now.Add(time.Hour),
	} {
		if got, err := ParseDeadline("deadline", in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"0s", "-5m", "soon", "2026-12-01T09:00:00Z", "2026-12-01T12:00:00"} {
		_, err := ParseDeadline("--deadline", in, now)
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), "invalid: "), "--deadline ") {
			t.Errorf("%s: %v, want ErrInvalid naming the field first", in, err)
		}
	}
}

func TestDerivedOperationID(t *testing.T) {
	fp := "0123456789abcdef0123"
	local := DerivedOperationID("export", fp, "")
	if local != "export-0123456789ab" {
		t.Errorf("local %q", local)
	}
	a, b := DerivedOperationID("export", fp, "agent-a"), DerivedOperationID("export", fp, "agent-b")
	if a == b || a == local || CheckOperationID("id", a) != nil {
		t.Errorf("tokens' ids %q %q (local %q): want distinct valid ids", a, b, local)
	}
}
