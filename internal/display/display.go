// Package display renders text that came from a provider, an agent or a
// person for a terminal or a text/plain answer, so that it can never pass
// for pollwarden's own output: no line break, control character, bidi
// override or invalid byte reaches the reader raw. Every human-readable
// output goes through it.
package display

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text keeps printable characters and spaces and writes every other rune
// as a Go escape (\n, \x1b, \u202e, \xff for an invalid byte), so one
// value stays on one line and a terminal is never sent a control
// sequence. Backslashes are kept as they are: Text is for sentences; use
// Quote where the reader must tell the text's own characters apart.
func Text(s string) string {
	if plain(s, true) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // 'x' with Go's escape inside
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// Quote marks text as quoted: double quotes around it, with quotes,
// backslashes and every unprintable rune Go-escaped inside, so what an
// agent or a provider wrote can neither end the quote nor the line.
func Quote(s string) string { return strconv.Quote(s) }

// Clip quotes a caller's value for an error message, cut to 80 runes so
// that a long one does not drown the problem. Every error that names a
// value it was given clips it here, so all read alike.
func Clip(s string) string { return Quote(Cut(s, 80)) }

// Cut shortens s to at most n runes, marking the cut with "…". It cuts
// between characters, never inside one, so the text stays valid UTF-8.
func Cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// Value shows a single word (a state, an id) as it is when it is made of
// printable characters other than spaces, quotes and backslashes, and
// quoted otherwise, so an odd value is visibly one value.
func Value(s string) string {
	if s != "" && plain(s, false) {
		return s
	}
	return Quote(s)
}

// plain reports whether s needs no escaping; spaces are allowed when
// spaces is true, quotes and backslashes only then.
func plain(s string, spaces bool) bool {
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			return false
		case r == ' ' || r == '"' || r == '\\':
			if !spaces {
				return false
			}
		case !strconv.IsPrint(r):
			return false
		}
	}
	return true
}
