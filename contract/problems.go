package contract

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// Problem is one thing wrong with a contract file.
type Problem struct {
	// Line is the 1-based line in the file; 0 when unknown.
	Line int
	// Path names the key, e.g. "state.path" or "result.require[0].kind";
	// empty for a problem with the file as a whole.
	Path string
	Msg  string
}

// String formats the problem as "line N: path: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is the error returned for a contract that cannot be used. It
// lists every problem found, in file order.
type Problems struct {
	// File is the path the contract was loaded from, if any.
	File string
	List []Problem
}

// Error prints every problem, one per line, prefixed with the file name
// when there is one.
func (ps *Problems) Error() string {
	lines := make([]string, 0, len(ps.List))
	for _, p := range ps.List {
		s := p.String()
		if ps.File != "" {
			s = ps.File + ": " + s
		}
		lines = append(lines, s)
	}
	if len(lines) == 0 {
		return "invalid contract"
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets callers test errors.Is(err, pollwarden.ErrInvalid).
func (ps *Problems) Unwrap() error { return pollwarden.ErrInvalid }

// problemsOf returns nil for an empty list so that a nil *Problems never
// becomes a non-nil error.
func problemsOf(list []Problem) error {
	if len(list) == 0 {
		return nil
	}
	// A misspelt key (an unknown key with a likely meaning) comes first:
	// it is usually the cause of what follows, such as the required key it
	// was meant to be reported missing. The rest stay in file order.
	sort.SliceStable(list, func(i, j int) bool {
		if ui, uj := list[i].unknownKey(), list[j].unknownKey(); ui != uj {
			return ui
		}
		return list[i].Line < list[j].Line
	})
	return &Problems{List: list}
}

// yamlProblem turns a yaml.v3 syntax error ("yaml: line 3: msg") into a
// Problem carrying the line. yaml.v3 prints a 0-based line for parser (as
// opposed to scanner) errors, and none when that is 0; both are corrected.
func yamlProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				line, msg = n, tail
			}
		}
	}
	if strings.HasPrefix(msg, "did not find expected <") || strings.HasPrefix(msg, "did not find expected ',' or") ||
		slices.Contains([]string{
			"did not find expected '-' indicator", "did not find expected key",
			"did not find expected node content", "found duplicate %TAG directive",
			"found duplicate %YAML directive", "found incompatible YAML document",
			"found undefined tag handle",
		}, msg) {
		line++
	}
	return Problem{Line: line, Msg: "not valid YAML: " + msg}
}

// clip names a value in a problem the way every error does
// (display.Clip).
func clip(s string) string { return display.Clip(s) }

func (p Problem) unknownKey() bool { return strings.HasPrefix(p.Msg, "unknown key; did you mean") }
