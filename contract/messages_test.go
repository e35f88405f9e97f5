package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden/contract/builtin"
)

// problemsFor parses src and returns its problems, failing if it parses.
func problemsFor(t *testing.T, src string) []Problem {
	t.Helper()
	_, err := Parse([]byte(src))
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: want problems, got %v", err)
	}
	return ps.List
}

const okHead = "version: 1\nname: x\nstatus:\n  url: \"https://a.example.com/{job_id}\"\n"

func TestIndentationInPlainWords(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		line int
		want string
	}{
		"deeper":  {okHead + "   method: GET\n", 5, "the indentation (3 spaces) is deeper than the line above, which opens nothing"},
		"between": {okHead + " method: GET\nstate: {}\n", 5, "the indentation (1 space) matches no key above"},
		"tab":     {"version: 1\nname: x\nstatus:\n\turl: \"https://a.example.com/{job_id}\"\n", 4, "the indentation uses a tab: YAML indents with spaces only"},
		"top":     {"version: 1\nname: x\n  status: 1\n", 3, "the indentation (2 spaces) is deeper"},
	} {
		t.Run(name, func(t *testing.T) {
			ps := problemsFor(t, tc.src)
			if len(ps) != 1 || ps[0].Line != tc.line || !strings.HasPrefix(ps[0].Msg, tc.want) {
				t.Fatalf("got %v, want line %d: %s…", ps, tc.line, tc.want)
			}
			if strings.Contains(ps[0].Msg, "did not find expected") || strings.Contains(ps[0].Msg, "mapping values") {
				t.Fatalf("yaml.v3's raw text leaked: %s", ps[0].Msg)
			}
		})
	}
}

// The search for the stray line finds none in well-formed files, so it
// can never blame a line of a file whose error is elsewhere.
func TestStrayLineQuietOnBuiltins(t *testing.T) {
	for _, n := range builtin.Names() {
		src, _ := builtin.Source(n)
		if line, why := strayLine(string(src)); line != 0 {
			t.Errorf("%s: line %d: %s", n, line, why)
		}
	}
}

func TestMisspeltKeyFirstWithSuggestion(t *testing.T) {
	src := okHead + "state:\n  path: s\n  pendng: [a]\n  success: [b]\n"
	ps := problemsFor(t, src)
	if len(ps) < 2 {
		t.Fatalf("want the typo and its consequence, got %v", ps)
	}
	if got := ps[0].String(); got != "line 7: state.pendng: unknown key; did you mean pending?" {
		t.Fatalf("first problem = %q", got)
	}
	// A key like no known one gets the list of what is known there.
	ps = problemsFor(t, okHead+"state: {path: s, pending: [a], success: [b]}\nzzzzzz: 1\n")
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "unknown key (known here: version, name, status") {
		t.Fatalf("got %v", ps)
	}
}

func TestNearest(t *testing.T) {
	known := []string{"pending", "success", "failure", "path", "raw"}
	for in, want := range map[string]string{"pendng": "pending", "sucess": "success", "pth": "path", "colour": "", "ra": "", "x": ""} {
		if got := nearest(in, known); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

// A backoff.base above max names the value the user wrote, not the
// default or a base contract's value as if the user had written it.
func TestBackoffBlamesTheWrittenValue(t *testing.T) {
	state := "state: {path: s, pending: [a], success: [b]}\n"
	for name, tc := range map[string]struct{ src, want string }{
		"default max": {okHead + state + "backoff: {base: 10m}\n",
			"line 6: backoff.base: 10m0s is more than backoff.max (2m0s, the default when max is not given)"},
		"written max": {okHead + state + "backoff:\n  base: 10m\n  max: 1m\n",
			"line 8: backoff.max: must be at least base (10m0s), got 1m0s"},
		"extends": {"version: 1\nextends: openai-batch\nname: x\nbackoff:\n  base: 2h\n",
			"line 5: backoff.base: 2h0m0s is more than backoff.max (30m0s, from the base contract)"},
	} {
		t.Run(name, func(t *testing.T) {
			ps := problemsFor(t, tc.src)
			if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), tc.want) {
				t.Fatalf("got %v\nwant %s…", ps, tc.want)
			}
		})
	}
}

// An unknown base is the one problem reported: not the sections it would
// have supplied, reported missing as if the user had left them out.
func TestUnknownBaseAlone(t *testing.T) {
	ps := problemsFor(t, "version: 1\nextends: openai-batchx\nname: x\n")
	if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), `line 2: extends: unknown base contract "openai-batchx"`) {
		t.Fatalf("got %v", ps)
	}
}

func TestTransportFailuresMode(t *testing.T) {
	head := okHead + "state: {path: s, pending: [a], success: [b]}\n"
	for src, want := range map[string]bool{
		head: false,
		head + "limits: {transport_failures: total}\n":       false,
		head + "limits: {transport_failures: consecutive}\n": true,
	} {
		c, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if c.Limits.ConsecutiveTransportFailures != want {
			t.Errorf("%q: consecutive = %v, want %v", src, c.Limits.ConsecutiveTransportFailures, want)
		}
	}
	ps := problemsFor(t, head+"limits: {transport_failures: sometimes}\n")
	if len(ps) != 1 || !strings.Contains(ps[0].String(), `limits.transport_failures: must be total or consecutive, got "sometimes"`) {
		t.Fatalf("got %v", ps)
	}
}
