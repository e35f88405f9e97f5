package prober

import (
	"bytes"
	"errors"
	"html"
	"slices"
	"strings"
)

// The two ways a guard stops a stream: a secret in one of its forms, or an
// HTML character reference too long to decide without holding the stream.
var (
	errStreamSecret = errors.New("the result holds the contract's credential; stopped, nothing of it handed over")
	errStreamEscape = errors.New("the result holds an HTML character reference longer than 32 bytes; stopped, not a whole result")
)

// maxReference bounds an HTML character reference a guard holds back
// while it waits for its end: &#0000…0099; can be made arbitrarily long.
const maxReference = 32

// guard watches a stream for the credential's secrets in the forms the
// status path's scrubber checks (R27): raw, and once decoded by each of its
// decoders (JSON escapes with \/ and \uXXXX, percent-encoding as a path or
// a query, HTML references). Each decoder reads the stream incrementally,
// and each decoded form keeps back its longest tail that could still be
// the start of a secret, so a secret split over any number of reads is
// found whole. Decided says how many bytes of the stream can no longer
// become part of a secret: only those may be handed over.
type guard struct {
	secrets [][]byte
	raw     matcher
	views   []*view
	seen    int64
	offs    []int64
}

// view is one decoding of the stream: the input whose escape is not
// decided yet, and the matcher over what it decoded.
type view struct {
	// starts holds the bytes an escape begins with.
	starts string
	decode func(string) string
	// extent returns the length of the escape at b[i] (0: a plain byte),
	// or ok false when later bytes decide it; final means none will come.
	extent  func(b []byte, i int, final bool) (n int, ok bool, err error)
	pend    []byte
	pendOff []int64
	m       matcher
	out     []byte
	outOff  []int64
	// in and inOff are reused for the pending input and the next read.
	in    []byte
	inOff []int64
}

// matcher keeps the decoded tail that is a prefix of some secret, with
// the stream offset each of its bytes came from.
type matcher struct {
	tail    []byte
	tailOff []int64
	buf     []byte
	bufOff  []int64
}

// newGuard watches for secrets; nil when there are none.
func newGuard(secrets []string) *guard {
	g := &guard{}
	for _, s := range secrets {
		if s != "" {
			g.secrets = append(g.secrets, []byte(s))
		}
	}
	if len(g.secrets) == 0 {
		return nil
	}
	g.views = []*view{
		{starts: `\`, decode: jsonUnescape, extent: jsonExtent},
		{starts: "%", decode: pathDecode, extent: percentExtent(false)},
		{starts: "%+", decode: queryDecode, extent: percentExtent(true)},
		{starts: "&", decode: html.UnescapeString, extent: htmlExtent},
	}
	return g
}

// feed reads the next bytes of the stream (final: the last) and returns
// how many bytes of the stream, from its start, are decided: no later
// byte can make them part of a secret. An error stops the stream.
func (g *guard) feed(b []byte, final bool) (int64, error) {
	start := g.seen
	g.seen += int64(len(b))
	g.offs = g.offs[:0]
	for i := range b {
		g.offs = append(g.offs, start+int64(i))
	}
	offs := g.offs
	if g.raw.feed(g.secrets, b, offs) {
		return 0, errStreamSecret
	}
	for _, v := range g.views {
		if err := v.feed(b, offs, final); err != nil {
			return 0, err
		}
		if v.m.feed(g.secrets, v.out, v.outOff) {
			return 0, errStreamSecret
		}
	}
	decided := g.seen
	if final {
		return decided, nil
	}
	decided = min(decided, g.raw.from(decided))
	for _, v := range g.views {
		decided = min(decided, v.m.from(decided))
		if len(v.pendOff) > 0 {
			decided = min(decided, v.pendOff[0])
		}
	}
	return decided, nil
}

// feed decodes what it can of the view's pending input and b into out.
func (v *view) feed(b []byte, offs []int64, final bool) error {
	v.in = append(append(v.in[:0], v.pend...), b...)
	v.inOff = append(append(v.inOff[:0], v.pendOff...), offs...)
	in, inOff := v.in, v.inOff
	v.out, v.outOff = slices.Grow(v.out[:0], len(in)), slices.Grow(v.outOff[:0], len(in))
	i := 0
	for i < len(in) {
		// A run without the escape's first byte is copied as it is.
		if j := bytes.IndexAny(in[i:], v.starts); j != 0 {
			if j < 0 {
				j = len(in) - i
			}
			v.out = append(v.out, in[i:i+j]...)
			v.outOff = append(v.outOff, inOff[i:i+j]...)
			i += j
			continue
		}
		n, ok, err := v.extent(in, i, final)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if n == 0 {
			v.out = append(v.out, in[i])
			v.outOff = append(v.outOff, inOff[i])
			i++
			continue
		}
		// The sentinel ends the escape where the stream's next byte would:
		// each decoder reads an escape the same with any byte after it
		// that is not part of it.
		d := strings.TrimSuffix(v.decode(string(in[i:i+n])+"\x00"), "\x00")
		for j := 0; j < len(d); j++ {
			v.out = append(v.out, d[j])
			v.outOff = append(v.outOff, inOff[i])
		}
		i += n
	}
	v.pend = append(v.pend[:0], in[i:]...)
	v.pendOff = append(v.pendOff[:0], inOff[i:]...)
	return nil
}

// feed reports whether the kept tail and b hold a secret; otherwise it
// keeps the longest tail that is the start of one.
func (m *matcher) feed(secrets [][]byte, b []byte, offs []int64) bool {
	m.buf = append(append(m.buf[:0], m.tail...), b...)
	m.bufOff = append(append(m.bufOff[:0], m.tailOff...), offs...)
	keep := 0
	for _, s := range secrets {
		if bytes.Contains(m.buf, s) {
			return true
		}
		for k := min(len(s)-1, len(m.buf)); k > keep; k-- {
			if bytes.HasPrefix(s, m.buf[len(m.buf)-k:]) {
				keep = k
				break
			}
		}
	}
	m.tail = append(m.tail[:0], m.buf[len(m.buf)-keep:]...)
	m.tailOff = append(m.tailOff[:0], m.bufOff[len(m.bufOff)-keep:]...)
	return false
}

// from is where the kept tail starts in the stream (upTo when none is kept).
func (m *matcher) from(upTo int64) int64 {
	if len(m.tailOff) == 0 {
		return upTo
	}
	return m.tailOff[0]
}

func ishexAll(b []byte) bool {
	for _, c := range b {
		if !ishex(c) {
			return false
		}
	}
	return true
}

// jsonExtent mirrors jsonUnescape: \" \\ \/ \b \f \n \r \t, \uXXXX and a
// \uXXXX\uXXXX pair after a surrogate; any other backslash is plain.
func jsonExtent(b []byte, i int, final bool) (int, bool, error) {
	if b[i] != '\\' {
		return 0, true, nil
	}
	rest := b[i+1:]
	if len(rest) == 0 {
		return 0, final, nil
	}
	switch rest[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true, nil
	case 'u':
	default:
		return 0, true, nil
	}
	hex := rest[1:]
	if len(hex) < 4 {
		return 0, final || !ishexAll(hex), nil
	}
	if !ishexAll(hex[:4]) {
		return 0, true, nil
	}
	if !isSurrogate(hex[:4]) {
		return 6, true, nil
	}
	pair := hex[4:]
	want := []byte(`\u`)
	switch {
	case len(pair) >= 6:
		if bytes.HasPrefix(pair, want) && ishexAll(pair[2:6]) {
			return 12, true, nil
		}
		return 6, true, nil
	case final:
		return 6, true, nil
	}
	// Undecided while what came could still be the pair's start.
	n := min(len(pair), 2)
	if !bytes.Equal(pair[:n], want[:n]) || len(pair) > 2 && !ishexAll(pair[2:]) {
		return 6, true, nil
	}
	return 0, false, nil
}

// isSurrogate reports whether four hex digits name a UTF-16 surrogate.
func isSurrogate(h []byte) bool {
	return h[0]|0x20 == 'd' && strings.IndexByte("89abcdefABCDEF", h[1]) >= 0
}

// percentExtent mirrors percentDecode: %XX, and + when plus is set.
func percentExtent(plus bool) func([]byte, int, bool) (int, bool, error) {
	return func(b []byte, i int, final bool) (int, bool, error) {
		switch {
		case b[i] == '+' && plus:
			return 1, true, nil
		case b[i] != '%':
			return 0, true, nil
		}
		hex := b[i+1:]
		if len(hex) < 2 {
			return 0, final || !ishexAll(hex), nil
		}
		if ishexAll(hex[:2]) {
			return 3, true, nil
		}
		return 0, true, nil
	}
}

// htmlExtent covers what html.UnescapeString may read as one reference: &
// then a run of name characters (or # with an optional x and digits) and
// an optional ;. A numeric reference of more than maxReference bytes stops
// the stream: its value depends on every digit, however many.
func htmlExtent(b []byte, i int, final bool) (int, bool, error) {
	if b[i] != '&' {
		return 0, true, nil
	}
	j := i + 1
	numeric := j < len(b) && b[j] == '#'
	if numeric {
		j++
		if j < len(b) && (b[j] == 'x' || b[j] == 'X') {
			j++
		}
	}
	digit := isAlnum
	if numeric {
		digit = func(c byte) bool { return '0' <= c && c <= '9' }
		if b[j-1] != '#' {
			digit = ishex
		}
	}
	for j < len(b) && j-i <= maxReference && digit(b[j]) {
		j++
	}
	switch {
	case j-i > maxReference && numeric:
		return 0, false, errStreamEscape
	case j-i > maxReference:
		// No entity name is this long; the decoder reads at most its
		// first few characters as one.
		return j - i, true, nil
	case j == len(b) && !final:
		return 0, false, nil
	case j < len(b) && b[j] == ';':
		j++
	}
	if j-i == 1 {
		return 0, true, nil
	}
	return j - i, true, nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
