package operations

import "testing"

// TestJSONDepth: brackets inside strings, escaped quotes included, do not
// count; nesting does.
func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`:                      0,
		`{}`:                     1,
		`{"a":[{"b":[]}]}`:       4,
		`{"a":"[[[{{{"}`:         1,
		`{"a":"\"[[[","b":[[]]}`: 3,
		`["\\",[["\\\"{{"]]]`:    3,
	} {
		if got := jsonDepth([]byte(in)); got != want {
			t.Errorf("jsonDepth(%s) = %d, want %d", in, got, want)
		}
	}
}
