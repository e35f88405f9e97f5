package contract

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
)

// decoder walks a yaml.v3 node tree and collects every problem it meets
// instead of stopping at the first, so a report is complete.
type decoder struct {
	probs []Problem
	// known lists the variables URL templates may use: {job_id} and the
	// contract's declared vars.
	known []string
	// base is base_url without a trailing slash, and baseOrigin its
	// origin; empty when the contract has none.
	base       string
	baseOrigin Origin
	// baseBad is set when base_url was given but refused: then the path
	// templates under it are not reported a second time.
	baseBad bool
}

func (d *decoder) addf(line int, path, format string, args ...any) {
	d.probs = append(d.probs, Problem{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// entry is one key of a mapping: the line of the key and its value.
type entry struct {
	line int
	val  *yaml.Node
}

// object is a YAML mapping whose keys were checked against a known set.
// Accessors report missing and wrongly typed values and return defaults,
// so decoding always runs to the end.
type object struct {
	d    *decoder
	path string
	// line is blamed for a missing key: the line of the key that
	// introduced this mapping.
	line int
	// present is true when a non-null mapping was given.
	present bool
	// bad is true when the object is absent or its own problem was
	// already reported (wrong type); then a missing child is not reported.
	bad  bool
	keys []string
	ents map[string]entry
}

// resolve follows aliases (bounded, since anchors can form cycles).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// kindName describes a node for "must be X, got Y" messages without
// echoing its value.
func kindName(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a string"
	}
	return "an unresolved alias"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// object checks that n is a mapping whose keys are all in known (any key
// when known is nil). A null or absent n gives an empty object.
func (d *decoder) object(path string, line int, n *yaml.Node, known []string) *object {
	o := &object{d: d, path: path, line: line, ents: map[string]entry{}}
	n = resolve(n)
	if isNull(n) {
		// Absent: nothing in it can be wrong, and a missing required key
		// of an absent section is not worth a second line.
		o.bad = true
		return o
	}
	if n.Kind != yaml.MappingNode {
		if path == "" {
			d.addf(n.Line, path, "a contract must be a mapping of keys, got %s", kindName(n))
		} else {
			d.addf(n.Line, path, "must be a mapping, got %s", kindName(n))
		}
		o.bad = true
		return o
	}
	o.present = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			d.addf(n.Content[i].Line, path, "keys must be names, got %s", kindName(k))
			continue
		}
		name := k.Value
		p := join(path, name)
		if len([]rune(name)) > 60 {
			p = join(path, clip(name))
		}
		prev, dup := o.ents[name]
		switch {
		case name == "<<":
			d.addf(k.Line, p, "merge keys are not supported")
		case known != nil && !slices.Contains(known, name):
			if guess := nearest(name, known); guess != "" {
				d.addf(k.Line, p, "unknown key; did you mean %s?", guess)
			} else {
				d.addf(k.Line, p, "unknown key (known here: %s)", strings.Join(known, ", "))
			}
		case dup:
			d.addf(k.Line, p, "duplicate key (first on line %d)", prev.line)
		default:
			o.keys = append(o.keys, name)
			o.ents[name] = entry{line: k.Line, val: n.Content[i+1]}
		}
	}
	return o
}

func (o *object) child(key string) string { return join(o.path, key) }

// has reports whether key was written (even as null).
func (o *object) has(key string) bool { _, ok := o.ents[key]; return ok }

// get returns the key's value unless it is absent or null; a required
// key that is missing is reported.
func (o *object) get(key string, required bool) (*yaml.Node, bool) {
	e, ok := o.ents[key]
	v := resolve(e.val)
	if !ok || isNull(v) {
		if required && !o.bad {
			line := o.line
			if ok {
				line = e.line
			}
			o.d.addf(line, o.child(key), "missing (required)")
		}
		return nil, false
	}
	return v, true
}

// lineOf is the line of key's value, or of the object when it is absent.
func (o *object) lineOf(key string) int {
	if e, ok := o.ents[key]; ok {
		return e.line
	}
	return o.line
}

// obj returns the mapping under key.
func (o *object) obj(key string, required bool, known ...string) *object {
	v, _ := o.get(key, required)
	return o.d.object(o.child(key), o.lineOf(key), v, known)
}

// scalar reports a value that is not a scalar.
func (o *object) scalar(key, want string, v *yaml.Node) bool {
	if v.Kind != yaml.ScalarNode {
		o.d.addf(v.Line, o.child(key), "must be %s, got %s", want, kindName(v))
		return false
	}
	return true
}

// str returns a string value. Any scalar is accepted as its text, since
// YAML reads plain words such as state names as numbers or booleans.
func (o *object) str(key string, required bool) (string, int, bool) {
	v, ok := o.get(key, required)
	if !ok || !o.scalar(key, "a string", v) {
		return "", o.lineOf(key), false
	}
	return v.Value, v.Line, true
}

// integer returns a whole number >= min, or def when absent.
func (o *object) integer(key string, def, min int) int {
	v, ok := o.get(key, false)
	if !ok || !o.scalar(key, "a whole number", v) {
		return def
	}
	var n int
	if v.ShortTag() != "!!int" || v.Decode(&n) != nil {
		o.d.addf(v.Line, o.child(key), "must be a whole number, got %s", clip(v.Value))
		return def
	}
	if n < min {
		o.d.addf(v.Line, o.child(key), "must be at least %d, got %d", min, n)
		return def
	}
	return n
}

// limit is integer for a count limit: at least 1 and at most
// pollwarden.MaxCount, so that no budget, nor any sum an extension makes,
// can overflow.
func (o *object) limit(key string, def int) int {
	n := o.integer(key, def, 1)
	if n > pollwarden.MaxCount {
		v, _ := o.get(key, false)
		o.d.addf(v.Line, o.child(key), "must be at most %d, got %d", pollwarden.MaxCount, n)
		return def
	}
	return n
}

// span is duration for a limit of time: greater than 0 and at most
// pollwarden.MaxSpan (a year).
func (o *object) span(key string, def time.Duration) time.Duration {
	d, ok := o.duration(key, def, false)
	if ok && d > pollwarden.MaxSpan {
		v, _ := o.get(key, false)
		o.d.addf(v.Line, o.child(key), "must be at most %s (a year), got %s", pollwarden.ShortDuration(pollwarden.MaxSpan), clip(v.Value))
		return def
	}
	return d
}

// rate returns a finite number >= 0 (whole or not), 0 when absent: a
// ceiling where 0 means none. A quoted number is refused, as for integers.
func (o *object) rate(key string) float64 {
	v, ok := o.get(key, false)
	if !ok || !o.scalar(key, "a number", v) {
		return 0
	}
	var f float64
	if tag := v.ShortTag(); (tag != "!!int" && tag != "!!float") || v.Decode(&f) != nil {
		o.d.addf(v.Line, o.child(key), "must be a number, got %s", clip(v.Value))
		return 0
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		o.d.addf(v.Line, o.child(key), "must be a finite number, 0 (no ceiling) or more, got %s", clip(v.Value))
		return 0
	}
	return f
}

// boolean returns a true/false value, false when absent.
func (o *object) boolean(key string) bool {
	v, ok := o.get(key, false)
	if !ok || !o.scalar(key, "true or false", v) {
		return false
	}
	var b bool
	if v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		o.d.addf(v.Line, o.child(key), "must be true or false, got %s", clip(v.Value))
		return false
	}
	return b
}

// duration returns a Go duration (> 0, or >= 0 when allowZero), or def.
func (o *object) duration(key string, def time.Duration, allowZero bool) (time.Duration, bool) {
	v, ok := o.get(key, false)
	if !ok || !o.scalar(key, "a duration", v) {
		return def, false
	}
	dur, err := time.ParseDuration(v.Value)
	switch {
	case err != nil:
		o.d.addf(v.Line, o.child(key), "bad duration %s (want a Go duration such as 250ms, 5s, 40m)", clip(v.Value))
	case dur < 0 || (dur == 0 && !allowZero):
		want := "greater than 0"
		if allowZero {
			want = "0 or more"
		}
		o.d.addf(v.Line, o.child(key), "must be %s, got %s", want, clip(v.Value))
	default:
		return dur, true
	}
	return def, false
}

// item is one element of a list, with its own path ("x.y[2]").
type item struct {
	path string
	line int
	node *yaml.Node
}

// list returns the elements of a list value.
func (o *object) list(key string) []item {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		o.d.addf(v.Line, o.child(key), "must be a list, got %s", kindName(v))
		return nil
	}
	// A list reached through an alias is blamed where the alias is used.
	aliasLine := 0
	if e := o.ents[key]; e.val != nil && e.val.Kind == yaml.AliasNode {
		aliasLine = e.val.Line
	}
	items := make([]item, 0, len(v.Content))
	for i, n := range v.Content {
		line := n.Line
		if aliasLine > 0 {
			line = aliasLine
		}
		items = append(items, item{path: o.child(key) + "[" + strconv.Itoa(i) + "]", line: line, node: resolve(n)})
	}
	return items
}

// strs returns the string elements of a list value; non-strings are
// reported and skipped.
func (o *object) strs(key string) []item {
	var out []item
	for _, it := range o.list(key) {
		if it.node == nil || it.node.Kind != yaml.ScalarNode || isNull(it.node) {
			o.d.addf(it.line, it.path, "must be a string, got %s", kindName(it.node))
			continue
		}
		out = append(out, it)
	}
	return out
}

// maxExpanded bounds the values a contract's aliases stand for, counted as
// if each alias were written out: far more than any contract needs, far
// less than the billions a few hundred bytes of nested aliases (an "alias
// bomb") expand to.
const maxExpanded = 100_000

// aliasBomb walks n's tree in document order without following aliases,
// adding up what each alias stands for, and returns the alias at which the
// sum passes maxExpanded; nil when it stays within. Each node's expanded
// size is computed once, so the walk is linear in the text however large
// the expansion; a node that contains itself counts as too large.
func aliasBomb(n *yaml.Node) *yaml.Node {
	sizes := map[*yaml.Node]int64{}
	var size func(n *yaml.Node) int64
	size = func(n *yaml.Node) int64 {
		if n == nil {
			return 0
		}
		if s, ok := sizes[n]; ok {
			if s < 0 { // still being counted: it contains itself
				return maxExpanded + 1
			}
			return s
		}
		sizes[n] = -1
		total := int64(1)
		if n.Kind == yaml.AliasNode {
			total = size(n.Alias)
		}
		for _, c := range n.Content {
			if total += size(c); total > maxExpanded {
				break
			}
		}
		total = min(total, maxExpanded+1)
		sizes[n] = total
		return total
	}
	var sum int64
	var walk func(n *yaml.Node) *yaml.Node
	walk = func(n *yaml.Node) *yaml.Node {
		if n == nil {
			return nil
		}
		if n.Kind == yaml.AliasNode {
			if sum += size(n.Alias); sum > maxExpanded {
				return n
			}
			return nil
		}
		for _, c := range n.Content {
			if a := walk(c); a != nil {
				return a
			}
		}
		return nil
	}
	return walk(n)
}

// anchorName cuts an anchor's name short for a message.
func anchorName(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
