package cli

import "testing"

// TestServeGCTarget: serve raises the collector's target only when the
// operator has not chosen one with GOGC.
func TestServeGCTarget(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		pct  int
		ok   bool
	}{
		{"unset", nil, serveGCPercent, true},
		{"empty", map[string]string{"GOGC": ""}, serveGCPercent, true},
		{"operator's", map[string]string{"GOGC": "50"}, 0, false},
		{"off", map[string]string{"GOGC": "off"}, 0, false},
	} {
		pct, ok := serveGCTarget(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		if pct != c.pct || ok != c.ok {
			t.Errorf("%s: got %d %v, want %d %v", c.name, pct, ok, c.pct, c.ok)
		}
	}
	if pct, ok := serveGCTarget(nil); pct != serveGCPercent || !ok {
		t.Errorf("no environment: got %d %v", pct, ok)
	}
}
