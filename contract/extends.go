package contract

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden/contract/builtin"
)

// Base is a contract another one may extend: its YAML text and where it
// comes from ("builtin:NAME" or a file path), which tells a cycle from a
// file that extends the built-in of its own name.
type Base struct {
	Source string
	Data   []byte
}

// BaseLookup finds the base called name, skipping any candidate whose
// source skip reports (those already on the extends chain).
type BaseLookup func(name string, skip func(source string) bool) (Base, bool)

// Builtins finds only the built-in contracts.
func Builtins(name string, skip func(string) bool) (Base, bool) {
	src := "builtin:" + name
	if skip(src) {
		return Base{}, false
	}
	data, ok := builtin.Source(name)
	return Base{Source: src, Data: data}, ok
}

// Then tries l first, then next: a loaded file wins over a built-in.
func (l BaseLookup) Then(next BaseLookup) BaseLookup {
	return func(name string, skip func(string) bool) (Base, bool) {
		if b, ok := l(name, skip); ok {
			return b, true
		}
		return next(name, skip)
	}
}

// maxExtends bounds a chain of bases: deeper is a mistake, not a design.
const maxExtends = 8

// extend returns root with its `extends:` chain merged in: maps merge key
// by key, a list or scalar of the extending file replaces the base's, a
// null removes the base's key, and status.credential is replaced whole.
// Nodes taken from a base carry line 0, since their lines are another
// file's. chain holds the sources already on the chain.
func (d *decoder) extend(root *yaml.Node, lookup BaseLookup, chain []string, names []string) *yaml.Node {
	root = resolve(root)
	if root == nil || root.Kind != yaml.MappingNode {
		return root
	}
	idx := -1
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := resolve(root.Content[i]); k != nil && k.Value == "extends" {
			idx = i
		}
	}
	if idx < 0 {
		return root
	}
	keyLine := root.Content[idx].Line
	v := resolve(root.Content[idx+1])
	own := withoutKey(root, idx)
	if v == nil || v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "" {
		d.addf(keyLine, "extends", "must name a contract (a built-in or another loaded contract), got %s", kindName(v))
		return own
	}
	name := v.Value
	if len(chain) >= maxExtends {
		d.addf(keyLine, "extends", "more than %d bases in a chain (%s)", maxExtends, strings.Join(append(names, name), " → "))
		return own
	}
	if lookup == nil {
		lookup = Builtins
	}
	skip := func(src string) bool { return slices.Contains(chain, src) }
	base, ok := lookup(name, skip)
	if !ok {
		if _, exists := lookup(name, func(string) bool { return false }); exists {
			d.addf(keyLine, "extends", "cycle: %s", strings.Join(append(names, name), " → "))
		} else {
			d.addf(keyLine, "extends", "unknown base contract %s (built-ins: %s; or the name of another loaded contract)",
				clip(name), strings.Join(builtin.Names(), ", "))
		}
		return own
	}
	broot, probs := document(base.Data)
	if len(probs) > 0 {
		d.addf(keyLine, "extends", "base %s does not parse: %s", name, probs[0])
		return own
	}
	sub := &decoder{}
	merged := sub.extend(broot, lookup, append(slices.Clone(chain), base.Source), append(slices.Clone(names), name))
	for _, p := range sub.probs {
		d.addf(keyLine, "extends", "in base %s: %s", name, p)
	}
	return mergeNodes(stripLines(merged, 0), own, "")
}

// withoutKey copies a mapping without the pair at index i.
func withoutKey(m *yaml.Node, i int) *yaml.Node {
	out := *m
	out.Content = append(slices.Clone(m.Content[:i]), m.Content[i+2:]...)
	return &out
}

// mergeNodes merges over onto base (both already alias-resolved at the
// top). path is the dotted key path of the mapping, for the credential rule.
func mergeNodes(base, over *yaml.Node, path string) *yaml.Node {
	base, over = resolve(base), resolve(over)
	if base == nil || base.Kind != yaml.MappingNode || over == nil || over.Kind != yaml.MappingNode || path == "status.credential" {
		return over
	}
	out := *over
	out.Content = nil
	overAt := map[string]int{}
	for i := 0; i+1 < len(over.Content); i += 2 {
		if k := resolve(over.Content[i]); k != nil && k.Kind == yaml.ScalarNode {
			overAt[k.Value] = i
		}
	}
	used := map[int]bool{}
	for i := 0; i+1 < len(base.Content); i += 2 {
		k := resolve(base.Content[i])
		j, overridden := overAt[k.Value]
		if !overridden {
			out.Content = append(out.Content, base.Content[i], base.Content[i+1])
			continue
		}
		used[j] = true
		ov := resolve(over.Content[j+1])
		if isNull(ov) {
			continue // null removes the base's key
		}
		out.Content = append(out.Content, over.Content[j], mergeNodes(base.Content[i+1], ov, join(path, k.Value)))
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		if !used[i] {
			out.Content = append(out.Content, over.Content[i], over.Content[i+1])
		}
	}
	return &out
}

// stripLines deep-copies n, resolving aliases (bounded), with every line
// set to line.
func stripLines(n *yaml.Node, depth int) *yaml.Node {
	n = resolve(n)
	if n == nil || depth > 64 {
		return n
	}
	c := *n
	c.Line, c.Column = 0, 0
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = stripLines(ch, depth+1)
	}
	return &c
}
