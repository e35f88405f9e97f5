package pollwarden

import (
	"strings"
	"time"
)

// ShortDuration prints a Go duration without zero units ("15m", not
// "15m0s"), as contracts are written; it still parses with
// time.ParseDuration.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
