package prober

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzScrubLeavesNoSecret: whatever text surrounds the secret, and in
// whichever of the usual encodings it is written, nothing the scrubber
// returns holds the secret, raw or once decoded, nor (when the text around
// it has no escape characters) any of the encoded forms. The same text
// streamed as a result, split into reads of cut bytes, is stopped before
// any of it that reveals the secret is handed over.
func FuzzScrubLeavesNoSecret(f *testing.F) {
	for _, s := range []string{"", "plain", "%", `\`, `\u00`, "&#", "a%2Fb", `x\/y`, "[REDACTED]", "++"} {
		for form := range 6 {
			f.Add(s, s, form, uint8(form+1))
		}
	}
	sc := newScrubber([]string{canary}, stateContract())
	f.Fuzz(func(t *testing.T, before, after string, form int, cut uint8) {
		var mid string
		switch form % 6 {
		case 0:
			mid = canary
		case 1:
			mid = jsonEscapeAll(canary)
		case 2:
			mid = strings.ToLower(url.QueryEscape(canary))
		case 3:
			mid = url.PathEscape(canary)
		case 4:
			mid = strings.ReplaceAll(canary, "/", `\/`)
		default:
			mid = strings.ReplaceAll(url.QueryEscape(jsonEscapeAll(canary)), "%5C", `\`)
		}
		for _, in := range []string{before + mid + after, before + after} {
			var streamed bytes.Buffer
			cuts := make([]int, len(in))
			for i := range cuts {
				cuts[i] = 1 + (int(cut)+i)%13
			}
			r := stream(context.Background(), &chunked{text: []byte(in), cuts: cuts}, &streamed, []string{canary}, 1<<20, time.Minute, FetchResponse{})
			if sc.reveals(streamed.String()) || !strings.HasPrefix(in, streamed.String()) || sc.reveals(in) && r.Problem == "" {
				t.Fatalf("streamed %q: handed over %q (problem %q)", in, streamed.String(), r.Problem)
			}
			out := sc.text(in)
			if sc.reveals(out) {
				t.Fatalf("text(%q) = %q still holds the secret", in, out)
			}
			if strings.ContainsAny(before+after, `\%&+`) {
				// Escape characters around the secret can make a form
				// read differently (\\u0073 is a backslash and u0073);
				// reveals above decodes them the way a reader would.
				continue
			}
			low := strings.ToLower(out)
			for _, form := range []string{canary, url.QueryEscape(canary), url.PathEscape(canary), jsonEscapeAll(canary),
				strings.ReplaceAll(canary, "/", `\/`)} {
				if strings.Contains(low, strings.ToLower(form)) {
					t.Fatalf("text(%q) = %q still holds the secret as %q", in, out, form)
				}
			}
		}
	})
}
