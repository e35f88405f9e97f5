package prober

import (
	"bytes"
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pollwarden/pollwarden"
)

// Redacted replaces a secret a provider echoed back.
const Redacted = "[REDACTED]"

// scrubber removes one secret from provider text (R27). It holds the
// secret, so it never leaves the package; a nil scrubber (no credential)
// removes nothing.
type scrubber struct {
	secret string
	forms  *strings.Replacer
	// keep holds the state values the contract lists: such a value is the
	// contract's word, not the provider's echo, and is kept whole even
	// when a short secret happens to occur inside it (secret "pire",
	// state "expired").
	keep map[string]bool
	// next removes the next secret, when the credential used several.
	next *scrubber
}

// newScrubber removes every one of secrets (a static secret; or a client
// secret and the token it minted; or an AWS key and session token), one
// after another, longest first so a secret inside another goes with it.
func newScrubber(secrets []string, c *pollwarden.ContractSpec) *scrubber {
	list := slices.Clone(secrets)
	sort.SliceStable(list, func(i, j int) bool { return len(list[i]) > len(list[j]) })
	var head *scrubber
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == "" {
			continue
		}
		head = &scrubber{secret: list[i], forms: replacer(list[i]), keep: listedStates(c), next: head}
	}
	return head
}

// text removes the secret from s, whether it appears raw, JSON-escaped,
// percent-encoded (either case of hex) or as HTML character references:
// when a decoding of s shows the secret, the decoded text is kept,
// redacted, instead of the provider's encoding of it.
func (sc *scrubber) text(s string) string {
	if s == "" || sc != nil && sc.keep[s] {
		return s
	}
	s = scrubSigV4(s)
	if sc == nil {
		return s
	}
	out := sc.forms.Replace(s)
	// A few rounds undo an encoding nested in another (a JSON-escaped
	// percent-encoded secret).
	for range 3 {
		changed := false
		for _, decode := range decoders {
			if d := decode(out); d != out && strings.Contains(d, sc.secret) {
				out, changed = sc.forms.Replace(d), true
			}
		}
		if !changed {
			break
		}
	}
	if sc.reveals(out) {
		// Deeper nesting than the rounds undo: keep nothing of it.
		return Redacted
	}
	if sc.next != nil {
		return sc.next.text(out)
	}
	return out
}

// reveals reports whether s, or one decoding of it, still holds the secret.
func (sc *scrubber) reveals(s string) bool {
	if strings.Contains(s, sc.secret) {
		return true
	}
	for _, decode := range decoders {
		if strings.Contains(decode(s), sc.secret) {
			return true
		}
	}
	return false
}

// value removes the secret from every string of a decoded JSON value,
// object keys included (a kept object is shown with its keys).
func (sc *scrubber) value(v any) any {
	switch t := v.(type) {
	case string:
		return sc.text(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = sc.value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[sc.text(k)] = sc.value(e)
		}
		return out
	}
	return v
}

// raw removes the secret from a JSON value kept as bytes.
func (sc *scrubber) raw(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || sc == nil && !mayHoldSigV4(string(m)) {
		return m
	}
	d := json.NewDecoder(bytes.NewReader(m))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		// Not JSON after all: keep it as a JSON string, redacted.
		v = string(m)
	}
	b, err := json.Marshal(sc.value(v))
	if err != nil {
		return nil
	}
	return b
}

// sigV4Parts find what an echoed AWS Signature Version 4 authorization
// (header or presigned query) holds beyond its algorithm: the credential
// scope, whose access key id names the account, and the signature, which
// replays one request for minutes. Neither is the secret key, so the
// secret scrubber never sees them; they go whatever the credential.
var sigV4Parts = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b((?:x-amz-)?credential\s*=\s*)[A-Z0-9]{16,128}(?:(?:/|%2F|\\/)[A-Za-z0-9_-]+)+`),
	regexp.MustCompile(`(?i)\b((?:x-amz-)?signature\s*=\s*)[0-9a-f]{64}`),
}

// scrubSigV4 removes the credential scope and signature of an echoed
// SigV4 authorization, keeping the names so the text still says what was
// there.
func scrubSigV4(s string) string {
	if !mayHoldSigV4(s) {
		return s
	}
	for _, re := range sigV4Parts {
		s = re.ReplaceAllString(s, "${1}"+Redacted)
	}
	if d := queryDecode(s); d != s && mayHoldSigV4(d) && sigV4Left(d) {
		// Percent-encoded as a whole (a URL in a query): keep the decoded
		// text, scrubbed.
		return scrubSigV4(d)
	}
	return s
}

// mayHoldSigV4 is the cheap test before the patterns run.
func mayHoldSigV4(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "credential") || strings.Contains(l, "signature")
}

// sigV4Left reports whether s still holds a credential scope or signature.
func sigV4Left(s string) bool {
	for _, re := range sigV4Parts {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			if !strings.HasSuffix(m[0], Redacted) {
				return true
			}
		}
	}
	return false
}

// decoders undo the encodings a provider may have put the secret in.
// Each is lenient: what is not a valid escape is kept as it is.
var decoders = [...]func(string) string{pathDecode, queryDecode, jsonUnescape, html.UnescapeString}

func pathDecode(s string) string { return percentDecode(s, false) }

func queryDecode(s string) string { return percentDecode(s, true) }

// percentDecode decodes every valid %XX (and + as a space when plus is
// set), keeping the rest as it is.
func percentDecode(s string, plus bool) string {
	if !strings.Contains(s, "%") && (!plus || !strings.Contains(s, "+")) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]):
			n, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(n))
			i += 2
		case c == '+' && plus:
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// jsonUnescape decodes the escapes of a JSON string (\uXXXX, \/, \n…)
// found in text that is not itself parsed as JSON, such as a header.
func jsonUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
			i++
		case 'b', 'f', 'n', 'r', 't':
			b.WriteByte("\b\f\n\r\t"[strings.IndexByte("bfnrt", e)])
			i++
		case 'u':
			if i+6 <= len(s) {
				if n, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil {
					r, used := rune(n), 5
					if utf16.IsSurrogate(r) && i+12 <= len(s) && s[i+6:i+8] == `\u` {
						if lo, err := strconv.ParseUint(s[i+8:i+12], 16, 16); err == nil {
							r, used = utf16.DecodeRune(r, rune(lo)), 11
						}
					}
					b.WriteRune(r)
					i += used
					continue
				}
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// replacer removes the secret in the forms it takes raw or escaped by
// common encoders, so the provider's own encoding of the rest of the text
// survives. (The "Scheme secret" form needs no entry of its own: replacing
// the secret inside it already removes it.)
func replacer(secret string) *strings.Replacer {
	forms := map[string]bool{secret: true}
	forms[url.QueryEscape(secret)] = true
	forms[url.PathEscape(secret)] = true
	if b, err := json.Marshal(secret); err == nil {
		forms[string(b[1:len(b)-1])] = true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(secret) == nil {
		s := strings.TrimSpace(buf.String())
		forms[s[1:len(s)-1]] = true
	}
	forms[strings.ReplaceAll(secret, "/", `\/`)] = true
	list := make([]string, 0, len(forms))
	for f := range forms {
		if f != "" {
			list = append(list, f)
		}
	}
	// Longest first: Replacer tries olds in argument order at each position.
	sort.Slice(list, func(i, j int) bool { return len(list[i]) > len(list[j]) })
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...)
}

func listedStates(c *pollwarden.ContractSpec) map[string]bool {
	if c == nil {
		return nil
	}
	t := c.State
	keep := map[string]bool{}
	for _, list := range [][]string{t.Pending, t.Success, t.Failure, t.Cancelled, t.Expired} {
		for _, v := range list {
			keep[v] = true
		}
	}
	return keep
}

// validUTF8Prefix cuts s to at most n bytes without splitting a rune.
func validUTF8Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
