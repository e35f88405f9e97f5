package prober

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// chunked hands out its text in the pieces cuts gives, one a Read.
type chunked struct {
	text []byte
	cuts []int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.text) == 0 {
		return 0, io.EOF
	}
	n := len(c.text)
	if len(c.cuts) > 0 {
		n = min(max(c.cuts[0], 1), n)
		c.cuts = c.cuts[1:]
	}
	n = min(n, len(p))
	copy(p, c.text[:n])
	c.text = c.text[n:]
	return n, nil
}

// streamForms are the ways a provider may write the secret into a result:
// each one the status path's scrubber finds.
func streamForm(secret string, form int, upper bool) string {
	hexCase := func(s string) string {
		if upper {
			return strings.ToUpper(s)
		}
		return s
	}
	switch form {
	case 0:
		return secret
	case 1:
		var b strings.Builder
		for _, r := range secret {
			b.WriteString(hexCase(fmt.Sprintf(`\u%04x`, r)))
		}
		return b.String()
	case 2:
		return strings.ReplaceAll(secret, "/", `\/`)
	case 3:
		return hexCase(url.QueryEscape(secret))
	case 4:
		return url.PathEscape(secret)
	case 5:
		var b strings.Builder
		for _, r := range secret {
			fmt.Fprintf(&b, "&#%d;", r)
		}
		return b.String()
	case 6:
		// Every other character escaped: a mixed echo.
		var b strings.Builder
		for i, r := range secret {
			if i%2 == 0 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	default:
		return html.EscapeString(secret)
	}
}

// TestStreamHoldsBackEveryFormOfTheSecret: however the reads split a
// result, and in whichever form the provider writes the secret, the fetch
// stops and nothing it handed over holds the secret or any byte of its
// form; a result without the secret is handed over whole, byte for byte.
func TestStreamHoldsBackEveryFormOfTheSecret(t *testing.T) {
	sc := newScrubber([]string{canary}, nil)
	rapid.Check(t, func(t *rapid.T) {
		plain := rapid.StringMatching(`[a-z0-9 {}":,.\-<>=/sk]{0,40}`)
		before := plain.Draw(t, "before")
		after := plain.Draw(t, "after")
		form := rapid.IntRange(0, 7).Draw(t, "form")
		mid := streamForm(canary, form, rapid.Bool().Draw(t, "upper"))
		with := rapid.Bool().Draw(t, "with")
		text := before + after
		if with {
			text = before + mid + after
		}
		cuts := rapid.SliceOfN(rapid.IntRange(1, 12), 0, 40).Draw(t, "cuts")
		var out bytes.Buffer
		r := stream(context.Background(), &chunked{text: []byte(text), cuts: cuts}, &out, []string{canary}, 1<<20, time.Minute, FetchResponse{})
		revealed := sc.reveals(text)
		switch {
		case !revealed:
			if r.Problem != "" || out.String() != text || int64(out.Len()) != r.Bytes {
				t.Fatalf("a result without the secret: problem %q, handed %q of %q", r.Problem, out.String(), text)
			}
		case r.Problem == "":
			t.Fatalf("the result %q holds the secret and was handed over whole", text)
		case !strings.HasPrefix(text, out.String()) || sc.reveals(out.String()):
			t.Fatalf("handed over %q of %q", out.String(), text)
		case with && out.Len() > len(before):
			t.Fatalf("handed over %q: part of the secret's form %q", out.String(), mid)
		}
	})
}

// TestStreamStopsAtALongCharacterReference: a reference padded with zeros
// past what a guard holds back stops the stream instead of growing it.
func TestStreamStopsAtALongCharacterReference(t *testing.T) {
	text := "ok &#" + strings.Repeat("0", 64) + "115;k-canary"
	var out bytes.Buffer
	r := stream(context.Background(), &chunked{text: []byte(text), cuts: []int{4, 7}}, &out, []string{canary}, 1<<20, time.Minute, FetchResponse{})
	if r.Problem == "" || strings.Contains(out.String(), "&#") {
		t.Fatalf("problem %q, handed over %q", r.Problem, out.String())
	}
	// The same reference, short, is read as the character it names.
	if html.UnescapeString("&#"+strings.Repeat("0", 64)+"115;") != "s" {
		t.Fatal("the HTML decoder reads long references; the guard must stop at them")
	}
}

// BenchmarkStream measures the guard's cost on a result without the
// secret, against the same copy without one.
func BenchmarkStream(b *testing.B) {
	text := bytes.Repeat([]byte(`{"id":"r-1","text":"caf\u00e9 50% & more \/ path","n":12}`+"\n"), 1<<14)
	for _, tc := range []struct {
		name    string
		secrets []string
	}{{"guarded", []string{canary}}, {"unguarded", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				stream(context.Background(), bytes.NewReader(text), io.Discard, tc.secrets, 1<<30, time.Minute, FetchResponse{})
			}
		})
	}
}
