// Package uritemplate expands RFC 6570 URI templates over string variables:
// every operator of levels 1 to 3, and the level 4 prefix modifier. Each
// part of a URL gets the escaping its operator calls for, so a value can
// never add a query parameter or a path segment that the template's author
// did not write. Composite (list and map) values are not supported: every
// variable pollwarden knows is a string.
package uritemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Template is a parsed URI template; it is immutable and safe to share.
type Template struct {
	raw   string
	parts []part
}

// part is either a literal (already encoded for output) or an expression.
type part struct {
	lit  string
	expr *Expr
}

// Expr is one {…} expression: its operator (0 for a simple one) and its
// variables, with its byte offsets in the template so callers can tell
// which part of a URL it lands in.
type Expr struct {
	Op         byte
	Vars       []VarSpec
	Start, End int // template[Start:End] is the expression with its braces
}

// VarSpec is one variable of an expression.
type VarSpec struct {
	Name string
	// Prefix keeps only the first Prefix characters of the value; 0 keeps all.
	Prefix int
	// Explode is accepted for RFC conformance; on a string value it changes
	// nothing (RFC 6570 section 2.4.2).
	Explode bool
}

// Error says where a template is malformed.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("URI template: %s at offset %d", e.Msg, e.Offset) }

// Parse checks raw and returns its template.
func Parse(raw string) (*Template, error) {
	t := &Template{raw: raw}
	var lit strings.Builder
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '{':
			end := strings.IndexByte(raw[i:], '}')
			if end < 0 {
				return nil, &Error{i, "unclosed '{'"}
			}
			e, err := parseExpr(raw[i+1:i+end], i+1)
			if err != nil {
				return nil, err
			}
			e.Start, e.End = i, i+end+1
			if lit.Len() > 0 {
				t.parts = append(t.parts, part{lit: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, part{expr: e})
			i += end + 1
		case c == '}':
			return nil, &Error{i, "'}' without '{'"}
		case c == '%':
			if !isPct(raw[i:]) {
				return nil, &Error{i, "'%' not followed by two hex digits"}
			}
			lit.WriteString(raw[i : i+3])
			i += 3
		case c < 0x80:
			if c <= ' ' || c == 0x7f || strings.IndexByte("\"'<>\\^`|", c) >= 0 {
				return nil, &Error{i, fmt.Sprintf("character %q may not appear in a template", c)}
			}
			lit.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, &Error{i, "invalid UTF-8"}
			}
			pctEncode(&lit, raw[i:i+n])
			i += n
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	return t, nil
}

// parseExpr reads the inside of {…}; off is its offset in the template.
func parseExpr(s string, off int) (*Expr, error) {
	e := &Expr{}
	if s != "" && strings.IndexByte("+#./;?&", s[0]) >= 0 {
		e.Op, s, off = s[0], s[1:], off+1
	} else if s != "" && strings.IndexByte("=,!@|", s[0]) >= 0 {
		return nil, &Error{off, fmt.Sprintf("operator %q is reserved", s[0])}
	}
	for _, spec := range strings.Split(s, ",") {
		v, err := parseVar(spec, off)
		if err != nil {
			return nil, err
		}
		e.Vars = append(e.Vars, v)
		off += len(spec) + 1
	}
	return e, nil
}

// parseVar reads one varspec: varname, then ":N" or "*".
func parseVar(s string, off int) (VarSpec, error) {
	var v VarSpec
	name := s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		n, err := strconv.Atoi(s[i+1:])
		if err != nil || n < 1 || n > 9999 || s[i+1] == '0' {
			return v, &Error{off + i, "prefix length must be 1 to 9999"}
		}
		name, v.Prefix = s[:i], n
	} else if strings.HasSuffix(s, "*") {
		name, v.Explode = s[:len(s)-1], true
	}
	if !validName(name) {
		return v, &Error{off, fmt.Sprintf("invalid variable name %q", name)}
	}
	v.Name = name
	return v, nil
}

// validName follows RFC 6570's varname: varchars (ALPHA, DIGIT, "_",
// pct-encoded) optionally joined by single dots.
func validName(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		case c == '%' && isPct(s[i:]):
			i += 2
		default:
			return false
		}
	}
	return true
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }

// Exprs lists the template's expressions in order.
func (t *Template) Exprs() []Expr {
	var out []Expr
	for _, p := range t.parts {
		if p.expr != nil {
			out = append(out, *p.expr)
		}
	}
	return out
}

// Names lists each variable the template uses, once, in order of appearance.
func (t *Template) Names() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range t.Exprs() {
		for _, v := range e.Vars {
			if !seen[v.Name] {
				seen[v.Name] = true
				out = append(out, v.Name)
			}
		}
	}
	return out
}

// Expand fills the template. A variable missing from vars is undefined and
// its expression contributes nothing, as RFC 6570 says; an empty string is
// defined.
func (t *Template) Expand(vars map[string]string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		expand(&b, p.expr, vars)
	}
	return b.String()
}

// Expand parses raw and fills it in one call.
func Expand(raw string, vars map[string]string) (string, error) {
	t, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return t.Expand(vars), nil
}
