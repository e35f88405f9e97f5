package contract

import (
	"fmt"
	"slices"
	"strings"
)

// indentMessages are yaml.v3's texts for what is, in a contract file,
// almost always a line indented wrongly.
var indentMessages = []string{
	"did not find expected key",
	"mapping values are not allowed in this context",
	"found character that cannot start any token",
	"did not find expected '-' indicator",
	"found a tab character that violates indentation",
	"block sequence entries are not allowed in this context",
}

// plainYAML rewrites a yaml.v3 indentation error in plain words, naming
// the line that is out of place when it can be found (yaml.v3 often names
// the line of the mapping the stray line broke, not the stray line).
func plainYAML(p Problem, data []byte) Problem {
	raw, _ := strings.CutPrefix(p.Msg, "not valid YAML: ")
	if !slices.Contains(indentMessages, raw) {
		return p
	}
	if line, why := strayLine(string(data)); line > 0 {
		return Problem{Line: line, Msg: "the indentation " + why}
	}
	return Problem{Line: p.Line, Msg: fmt.Sprintf("the indentation here or just below does not fit the lines above: keys of one mapping start in the same column, indented with spaces (yaml says: %s)", raw)}
}

// strayLine finds the first line whose indentation fits no open mapping,
// and why; 0 when every line fits (the error is something else).
func strayLine(text string) (int, string) {
	stack := []int{0}
	prevInd, prevText, block := 0, "", -1
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " \t")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		ind := len(l) - len(trimmed)
		if block >= 0 {
			if ind > block {
				continue // inside a | or > block scalar
			}
			block = -1
		}
		if strings.ContainsRune(l[:ind], '\t') {
			return i + 1, "uses a tab: YAML indents with spaces only"
		}
		top := stack[len(stack)-1]
		switch {
		case ind > top:
			opens := strings.HasSuffix(prevText, ":") || strings.HasSuffix(prevText, "-") ||
				strings.HasPrefix(prevText, "- ") && ind == prevInd+2
			if !opens || ind <= prevInd && !strings.HasPrefix(prevText, "- ") {
				return i + 1, fmt.Sprintf("(%s) is deeper than the line above, which opens nothing: align this key with the keys above it", spaces(ind))
			}
			stack = append(stack, ind)
		case ind < top:
			for len(stack) > 1 && stack[len(stack)-1] > ind {
				stack = stack[:len(stack)-1]
			}
			if stack[len(stack)-1] != ind {
				return i + 1, fmt.Sprintf("(%s) matches no key above: align this key with the keys of the mapping it belongs to", spaces(ind))
			}
		}
		prevInd, prevText = ind, stripComment(strings.TrimSpace(trimmed))
		if strings.HasSuffix(prevText, "|") || strings.HasSuffix(prevText, ">") || strings.HasSuffix(prevText, "|-") || strings.HasSuffix(prevText, ">-") {
			block = ind
		}
	}
	return 0, ""
}

// stripComment drops a trailing " # comment" (a rough cut: good enough to
// see whether a line ends with a colon).
func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}
