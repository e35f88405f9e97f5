package contract

import (
	"errors"
	"strings"
	"testing"
)

// aliasBombText is nine levels of ten aliases each: 10^9 values in
// status.body from a few hundred bytes of text.
const aliasBombText = `a: &a [x,x,x,x,x,x,x,x,x,x]
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

// TestAliasBombRefused: a contract whose aliases stand for more than
// maxExpanded values is refused before anything follows them, naming the
// alias where the count passed the bound: the eighth *d (11,111 values
// each) on line 5.
func TestAliasBombRefused(t *testing.T) {
	_, err := Parse([]byte(aliasBombText))
	ps, ok := errors.AsType[*Problems](err)
	if !ok || len(ps.List) != 1 {
		t.Fatalf("got %v, want one problem", err)
	}
	if p := ps.List[0]; p.Line != 5 || !strings.Contains(p.Msg, "YAML alias *d") || !strings.Contains(p.Msg, "alias bomb") {
		t.Fatalf("problem %+v, want line 5 naming *d as an alias bomb", p)
	}
}

// TestAliasBombBound: aliases standing for 23,441 values are read as
// usual (the file fails only on what a contract lacks); one more level,
// past the bound, is refused.
func TestAliasBombBound(t *testing.T) {
	lines := strings.Split(aliasBombText, "\n")
	under := strings.Join(lines[:4], "\n") + "\nversion: 1\nname: small\nstatus: {url: \"https://x.example/{job_id}\", method: POST, body: *d}\n"
	if _, err := Parse([]byte(under)); err == nil || strings.Contains(err.Error(), "alias bomb") {
		t.Fatalf("23,441 values: %v, want only the ordinary problems", err)
	}
	over := strings.Join(lines[:5], "\n") + "\nversion: 1\nname: big\nstatus: {url: \"https://x.example/{job_id}\", method: POST, body: *e}\n"
	if _, err := Parse([]byte(over)); err == nil || !strings.Contains(err.Error(), "alias bomb") {
		t.Fatalf("past the bound: %v, want an alias bomb", err)
	}
}
