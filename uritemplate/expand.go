package uritemplate

import (
	"strings"
	"unicode/utf8"
)

// opSpec is one row of RFC 6570 Appendix A's table.
type opSpec struct {
	first, sep string
	named      bool
	ifemp      string
	reserved   bool // allow U+R instead of U
}

func specOf(op byte) opSpec {
	switch op {
	case '+':
		return opSpec{sep: ",", reserved: true}
	case '#':
		return opSpec{first: "#", sep: ",", reserved: true}
	case '.':
		return opSpec{first: ".", sep: "."}
	case '/':
		return opSpec{first: "/", sep: "/"}
	case ';':
		return opSpec{first: ";", sep: ";", named: true}
	case '?':
		return opSpec{first: "?", sep: "&", named: true, ifemp: "="}
	case '&':
		return opSpec{first: "&", sep: "&", named: true, ifemp: "="}
	}
	return opSpec{sep: ","}
}

// expand writes one expression following Appendix A's algorithm for
// string values.
func expand(b *strings.Builder, e *Expr, vars map[string]string) {
	s := specOf(e.Op)
	n := 0
	for _, v := range e.Vars {
		val, ok := vars[v.Name]
		if !ok {
			continue
		}
		if n == 0 {
			b.WriteString(s.first)
		} else {
			b.WriteString(s.sep)
		}
		n++
		if s.named {
			b.WriteString(v.Name)
			if val == "" {
				b.WriteString(s.ifemp)
				continue
			}
			b.WriteByte('=')
		}
		if v.Prefix > 0 {
			val = prefix(val, v.Prefix)
		}
		encode(b, val, s.reserved)
	}
}

// prefix keeps the first n characters (not bytes) of s.
func prefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// encode copies unreserved characters and percent-encodes the rest; with
// reserved, it also copies reserved characters and existing pct-encoded
// triplets.
func encode(b *strings.Builder, s string, reserved bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isUnreserved(c), reserved && isReserved(c):
			b.WriteByte(c)
			i++
		case reserved && c == '%' && isPct(s[i:]):
			b.WriteString(s[i : i+3])
			i += 3
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			pctEncode(b, s[i:i+n])
			i += n
		}
	}
}

func pctEncode(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		b.WriteByte('%')
		b.WriteByte(hex[s[i]>>4])
		b.WriteByte(hex[s[i]&15])
	}
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isReserved(c byte) bool { return strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0 }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isPct reports whether s starts with a pct-encoded triplet.
func isPct(s string) bool { return len(s) >= 3 && s[0] == '%' && isHex(s[1]) && isHex(s[2]) }
