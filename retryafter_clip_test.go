package pollwarden

import (
	"strings"
	"testing"
	"time"
)

// TestRetryAfterErrorCutsBetweenCharacters: a long odd Retry-After is
// named in the error cut between characters, not inside one.
func TestRetryAfterErrorCutsBetweenCharacters(t *testing.T) {
	_, err := ParseRetryAfter("1"+strings.Repeat("é", 100), time.Now())
	if err == nil {
		t.Fatal("a garbage Retry-After was taken")
	}
	if strings.Contains(err.Error(), `\x`) || !strings.Contains(err.Error(), "é…") {
		t.Fatalf("error does not cut the value between characters: %v", err)
	}
}
