package contract

import (
	"errors"
	"strings"
	"testing"
)

// aliasBomb is nine levels of ten aliases each: 10^9 values in status.body
// from a few hundred bytes of text.
const aliasBomb = `a: &a [x,x,x,x,x,x,x,x,x,x]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
version: 1
name: bomb
status: {url: "https://x.example/{job_id}", method: POST, body: *i}
`

// TestAliasRefused: a contract with an alias is refused before anything
// follows it, naming the line of the first alias, whether the alias is a
// bomb or a single harmless reuse (the refusal is by kind, not by size).
func TestAliasRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		line int
	}{
		"bomb":   {aliasBomb, 2},
		"single": {"version: 1\nname: one\nstatus: {url: &u \"https://x.example/{job_id}\"}\nx: *u\n", 4},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			ps, ok := errors.AsType[*Problems](err)
			if !ok || len(ps.List) != 1 {
				t.Fatalf("got %v, want one problem", err)
			}
			if p := ps.List[0]; p.Line != tc.line || !strings.Contains(p.Msg, "may not use aliases") {
				t.Fatalf("problem %+v, want line %d refusing aliases", p, tc.line)
			}
		})
	}
}

// TestAnchorWithoutAliasAllowed: an anchor nobody refers to expands to
// nothing and is left alone.
func TestAnchorWithoutAliasAllowed(t *testing.T) {
	text := `version: 1
name: anchored
status: {url: &u "https://x.example/jobs/{job_id}"}
state: {path: state, pending: [running], success: [done], failure: [failed]}
limits: {deadline: 60s, max_status_requests: 10}
`
	if _, err := Parse([]byte(text)); err != nil {
		t.Fatal(err)
	}
}
