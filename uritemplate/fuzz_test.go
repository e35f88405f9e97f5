package uritemplate

import (
	"strings"
	"testing"
)

// FuzzExpand checks, for any template and value, that parsing never
// panics and that a simple {v} expansion of the value adds nothing but
// unreserved characters and %XX triplets.
func FuzzExpand(f *testing.F) {
	for _, tc := range rfcCases {
		f.Add(tc.tmpl, "run-q&force=true&all=1")
	}
	f.Add("https://p.test/{+job_id}", "projects/p/operations/o")
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		if tp, err := Parse(tmpl); err == nil {
			_ = tp.Expand(map[string]string{"job_id": value, "var": value, "x": value})
		}
		got, err := Expand("{v}", map[string]string{"v": value})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(got); i++ {
			c := got[i]
			if isUnreserved(c) {
				continue
			}
			if !isPct(got[i:]) {
				t.Fatalf("{v} of %q = %q: byte %q at %d is neither unreserved nor %%XX", value, got, c, i)
			}
			i += 2
		}
		if strings.ContainsAny(got, "/?#&=") {
			t.Fatalf("{v} of %q = %q keeps a delimiter", value, got)
		}
	})
}
