package display

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"connection refused by 127.0.0.1:80":          "connection refused by 127.0.0.1:80",
		"a\n06:49:40 alice (approver) decided extend": `a\n06:49:40 alice (approver) decided extend`,
		"\x1b[2J":            `\x1b[2J`,
		"tab\there":          `tab\there`,
		"l\u2028p\u2029":     `l\u2028p\u2029`,
		"bidi \u202egnp.exe": `bidi \u202egnp.exe`,
		"iso \u2066x\u2069":  `iso \u2066x\u2069`,
		"bad \xff byte":      `bad \xff byte`,
		"café ünïcode":       "café ünïcode",
		`say "hi" \ ok`:      `say "hi" \ ok`,
		"cr\r":               `cr\r`,
		"nul\x00":            `nul\x00`,
		"del\x7f":            `del\x7f`,
		"c1\u0085":           `c1\u0085`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestValueAndQuote(t *testing.T) {
	for in, want := range map[string]string{
		"running":          "running",
		"in progress":      `"in progress"`,
		"":                 `""`,
		"x\ny":             `"x\ny"`,
		`a"b`:              `"a\"b"`,
		`a\nb`:             `"a\\nb"`,
		"\u202etxt":        `"\u202etxt"`,
		"ünïcode-state":    "ünïcode-state",
		"run\xffning":      `"run\xffning"`,
		"expired_2024-x.y": "expired_2024-x.y",
	} {
		if got := Value(in); got != want {
			t.Errorf("Value(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Quote("a\n06:49:40 alice"); got != `"a\n06:49:40 alice"` {
		t.Errorf("Quote = %s", got)
	}
}

// TestCutKeepsCharactersWhole: a cut falls between characters, so a long
// value in any script stays valid UTF-8 and is marked as cut.
func TestCutKeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("é", 100)
	got := Cut(s, 10)
	if got != strings.Repeat("é", 10)+"…" || !utf8.ValidString(got) {
		t.Fatalf("Cut = %q", got)
	}
	if Cut("short", 10) != "short" {
		t.Fatal("a short value was changed")
	}
}
