package recordjson

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/pollwarden/pollwarden"
)

// DecodeOperation decodes rec into op, which must be the zero Operation,
// exactly as json.Unmarshal would. Strings of op may share rec's memory.
func DecodeOperation(rec string, op *pollwarden.Operation) error {
	d := decoder{s: rec}
	if d.operation(op) {
		return nil
	}
	*op = pollwarden.Operation{}
	return json.Unmarshal([]byte(rec), op)
}

// decoder reads the form AppendOperation writes. Each method reports
// false for anything it does not read exactly as encoding/json would; the
// caller then leaves the whole record to json.Unmarshal.
type decoder struct {
	s    string
	i    int
	seen uint64 // the fields met so far, by their place in the switch
}

func (d *decoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// punct consumes c after optional white space.
func (d *decoder) punct(c byte) bool {
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// once marks field n seen: a repeated key is left to encoding/json.
func (d *decoder) once(n uint) bool {
	if d.seen&(1<<n) != 0 {
		return false
	}
	d.seen |= 1 << n
	return true
}

// str reads a JSON string: a substring of the record when it has no
// escapes. Control characters and invalid UTF-8, which encoding/json
// rejects or replaces, report false.
func (d *decoder) str() (string, bool) {
	if !d.punct('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			v := d.s[start:d.i]
			d.i++
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			return v, true
		case c == '\\':
			return d.unquote(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// unquote finishes a string with escapes, begun at start.
func (d *decoder) unquote(start int) (string, bool) {
	b := make([]byte, 0, d.i-start+16)
	b = append(b, d.s[start:d.i]...)
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(b) {
				return "", false
			}
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.s) {
			return "", false
		}
		e := d.s[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if d.i+4 > len(d.s) {
				return "", false
			}
			r, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
			// Surrogates (pairs or not) are left to encoding/json.
			if err != nil || r >= 0xD800 && r < 0xE000 {
				return "", false
			}
			d.i += 4
			b = utf8.AppendRune(b, rune(r))
		default:
			return "", false
		}
	}
	return "", false
}

// number reads a JSON number's text, strictly by the grammar.
func (d *decoder) number() (string, bool) {
	d.ws()
	start := d.i
	if d.i < len(d.s) && d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.i < len(d.s) && d.s[d.i] >= '1' && d.s[d.i] <= '9':
		d.digits()
	default:
		return "", false
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if !d.digits() {
			return "", false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return "", false
		}
	}
	return d.s[start:d.i], true
}

func (d *decoder) digits() bool {
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// integer reads a number into an int field: a fraction, an exponent or
// an overflow is a type error for encoding/json, left to it.
func (d *decoder) integer() (int64, bool) {
	s, ok := d.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func (d *decoder) int(p *int) bool {
	n, ok := d.integer()
	if !ok || int64(int(n)) != n {
		return false
	}
	*p = int(n)
	return true
}

// time reads a time as time.Time.UnmarshalJSON does: the text between
// the quotes, unescaped, in strict RFC 3339.
func (d *decoder) time(t *time.Time) bool {
	if !d.punct('"') {
		return false
	}
	start := d.i
	for d.i < len(d.s) && d.s[d.i] != '"' {
		if d.s[d.i] == '\\' {
			return false
		}
		d.i++
	}
	if d.i == len(d.s) {
		return false
	}
	var buf [64]byte
	text := append(buf[:0], d.s[start:d.i]...)
	d.i++
	return t.UnmarshalText(text) == nil
}

func (d *decoder) timePtr(p **time.Time) bool {
	t := new(time.Time)
	if !d.time(t) {
		return false
	}
	*p = t
	return true
}

// members counts the members of the object being read (its top-level
// commas, plus one), without moving: sizing a map up front spares its
// growth, which profiles showed for the contract digest's ten entries.
func (d *decoder) members() int {
	e := decoder{s: d.s, i: d.i}
	n := 1
	for {
		if _, ok := e.span(); !ok || e.i >= len(e.s) || e.s[e.i] != ',' {
			return n
		}
		e.i++
		n++
	}
}

// stringMap reads an object of strings; a repeated key keeps its last
// value, as in encoding/json.
func (d *decoder) stringMap(p *map[string]string) bool {
	if !d.punct('{') {
		return false
	}
	m := make(map[string]string, d.members())
	*p = m
	if d.punct('}') {
		return true
	}
	for {
		k, ok := d.str()
		if !ok || !d.punct(':') {
			return false
		}
		v, ok := d.str()
		if !ok {
			return false
		}
		m[k] = v
		if d.punct('}') {
			return true
		}
		if !d.punct(',') {
			return false
		}
	}
}

func (d *decoder) strings(p *[]string) bool {
	if d.literal("null") {
		*p = nil
		return true
	}
	if !d.punct('[') {
		return false
	}
	list := []string{}
	if !d.punct(']') {
		for {
			s, ok := d.str()
			if !ok {
				return false
			}
			list = append(list, s)
			if d.punct(']') {
				break
			}
			if !d.punct(',') {
				return false
			}
		}
	}
	*p = list
	return true
}

func (d *decoder) literal(word string) bool {
	d.ws()
	if len(d.s)-d.i >= len(word) && d.s[d.i:d.i+len(word)] == word {
		d.i += len(word)
		return true
	}
	return false
}

func (d *decoder) bool(p *bool) bool {
	switch {
	case d.literal("true"):
		*p = true
	case d.literal("false"):
		*p = false
	default:
		return false
	}
	return true
}

// span reads any value and returns its text, for raw JSON and for the
// nested records left to encoding/json. It only matches brackets; what it
// returns is validated by whoever decodes it.
func (d *decoder) span() (string, bool) {
	d.ws()
	start := d.i
	depth := 0
	for d.i < len(d.s) {
		switch c := d.s[d.i]; c {
		case '"':
			d.i++
			for d.i < len(d.s) && d.s[d.i] != '"' {
				if d.s[d.i] == '\\' {
					d.i++
				}
				d.i++
			}
			if d.i >= len(d.s) {
				return "", false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return d.s[start:d.i], d.i > start
			}
			depth--
		case ',':
			if depth == 0 {
				return d.s[start:d.i], d.i > start
			}
		}
		d.i++
	}
	return "", false
}

// raw reads a json.RawMessage: the value's text, copied, as its
// UnmarshalJSON keeps it (null included).
func (d *decoder) raw(p *json.RawMessage) bool {
	s, ok := d.span()
	if !ok {
		return false
	}
	b := []byte(trimWS(s))
	if !json.Valid(b) {
		return false
	}
	*p = b
	return true
}

// nested reads a nested record with encoding/json itself.
func nested[T any](d *decoder, p **T) bool {
	s, ok := d.span()
	if !ok || trimWS(s) == "null" {
		return false
	}
	var v *T
	if json.Unmarshal([]byte(s), &v) != nil || v == nil {
		return false
	}
	*p = v
	return true
}

func trimWS(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t' || s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
