package pollwarden

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckText refuses a caller's string that is not valid UTF-8, naming the
// field. Decoding or storing it would turn each bad byte into U+FFFD, so
// an id, a job id or a name would silently become text the caller never
// sent (and two different ids could become one).
func CheckText(field, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return Refuse(ErrInvalid, "", "%s is not valid UTF-8 (bad byte at offset %d); send UTF-8 text", field, invalidAt([]byte(s)))
}

// CheckJSONText refuses a raw JSON document holding bytes that are not
// valid UTF-8, or a \u escape of half a surrogate pair (which decodes to
// U+FFFD just the same), naming the field whose string holds them (e.g.
// "job_id", "vars.region", "items[2]"). It must run on the bytes as
// received: encoding/json replaces both with U+FFFD without an error.
func CheckJSONText(data []byte) error {
	bad := invalidAt(data)
	if s := loneSurrogateAt(data); s >= 0 && (bad < 0 || s < bad) {
		bad = s
	}
	if bad < 0 {
		return nil
	}
	if field := fieldAt(data, bad); field != "" {
		return Refuse(ErrInvalid, "", "%s is not valid UTF-8 (at offset %d of the body); send UTF-8 text", field, bad)
	}
	return Refuse(ErrInvalid, "", "the body is not valid UTF-8 (at offset %d); send UTF-8 text", bad)
}

// invalidAt is the offset of the first byte of b that is not part of a
// valid UTF-8 sequence, or -1.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogateAt is the offset of the first \u escape, inside a JSON
// string, of a surrogate that is not part of a high-low pair, or -1.
func loneSurrogateAt(b []byte) int {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r, ok := hex4(b, i+2)
			switch {
			case !ok:
				return -1 // malformed: the decoder reports it
			case r >= 0xD800 && r < 0xDC00:
				lo, ok := hex4(b, i+8)
				if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' || !ok || lo < 0xDC00 || lo > 0xDFFF {
					return i
				}
				i += 11
			case r >= 0xDC00 && r <= 0xDFFF:
				return i
			default:
				i += 5
			}
		case c == '\\':
			i++
		}
	}
	return -1
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(n), err == nil
}

// jsonFrame is one open object or array while fieldAt walks a document.
type jsonFrame struct {
	object  bool
	key     string // the current member's name (objects)
	index   int    // the current element (arrays)
	wantKey bool   // the next token of an object is a member name
}

// fieldAt walks data's tokens and names the field whose token spans
// offset bad; "" when none does (the bad byte is outside any string, a
// syntax error the caller's decoder reports).
func fieldAt(data []byte, bad int) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*jsonFrame
	path := func(withKey bool) string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.object && (withKey || i < len(stack)-1):
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			case !f.object:
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		return b.String()
	}
	done := func() { // a value just ended
		if n := len(stack); n > 0 {
			if top := stack[n-1]; top.object {
				top.wantKey = true
			} else {
				top.index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *jsonFrame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		isKey := top != nil && top.object && top.wantKey
		if s, ok := tok.(string); ok && isKey {
			top.key, top.wantKey = s, false
		}
		if dec.InputOffset() > int64(bad) {
			if isKey {
				if p := path(false); p != "" {
					return "a field name in " + p
				}
				return "a field name"
			}
			if p := path(true); p != "" {
				return p
			}
			return "the body"
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &jsonFrame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &jsonFrame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			if !isKey {
				done()
			}
		}
	}
}
