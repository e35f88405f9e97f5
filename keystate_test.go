package pollwarden

import (
	"testing"
	"time"
)

// The views read the current window's use and the live waiters only.
func TestKeyStateViews(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ks := &KeyState{Per: time.Hour, WindowStart: t0, WindowUsed: 7,
		Waiting: []KeyWaiter{{Priority: 1, Owner: "a", Count: 2, Until: t0.Add(time.Minute)}, {Priority: 5, Owner: "b", Count: 3, Until: t0.Add(time.Hour)}}}
	if got := ks.Used(t0.Add(59 * time.Minute)); got != 7 {
		t.Errorf("used within the window: %d", got)
	}
	if got := ks.Used(t0.Add(time.Hour)); got != 0 {
		t.Errorf("used after the window: %d", got)
	}
	if got := ks.Waiters(t0); got != 5 {
		t.Errorf("waiters: %d, want 5", got)
	}
	if got := ks.Waiters(t0.Add(2 * time.Minute)); got != 3 {
		t.Errorf("waiters once an entry expired: %d, want 3", got)
	}
	if NewKeyState("k").Remaining != -1 {
		t.Error("a new key claims a remaining count")
	}
}
