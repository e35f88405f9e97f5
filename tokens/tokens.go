// Package tokens holds who may use the daemon's doors: the tokens file
// (names, roles, SHA-256 of each bearer token, an agent's scope) and the
// Caller a presented token identifies. The HTTP API and the MCP endpoint
// both authenticate through it, so neither depends on the other.
package tokens

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
)

// Set maps bearer tokens, by their SHA-256, to who presents them. Only
// hashes are kept: a leaked tokens file or memory dump does not hand out
// the tokens themselves. A Set is safe for concurrent use; Replace
// swaps the whole set at once, so a reload (SIGHUP) never exposes half a
// file.
type Set struct {
	entries atomic.Pointer[[]tokenEntry]
}

type tokenEntry struct {
	caller Caller
	hash   [sha256.Size]byte
}

// Spec is one entry of a tokens file: who, in which role, the hex
// SHA-256 of the token they present, and, for an agent, which operations
// it sees (Scope: "" or own, its own; all, every operation).
type Spec struct {
	Name   string
	Role   pollwarden.Role
	SHA256 string
	Scope  Scope
}

// Load reads a tokens file (SPEC, `--tokens FILE`):
//
//	tokens:
//	  - {name: build-agent, role: agent, sha256: "<hex sha256 of the token>"}
//	  - {name: ci, role: agent, sha256: "<hex>", scope: all}
//
// An agent sees only the operations it created unless its entry says
// scope: all (scope: own is the default, said out loud).
// Unknown keys, a bad role, a malformed hash, and two entries with one name
// or one hash are refused; the error lists every problem with its line and
// the entry's name. The file never holds a token, so nothing here can leak
// one.
func Load(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	specs, problems := parseTokens(data)
	if len(problems) > 0 {
		for i := range problems {
			problems[i] = path + ": " + problems[i]
		}
		return nil, fmt.Errorf("%w: tokens file refused:\n%s", pollwarden.ErrInvalid, strings.Join(problems, "\n"))
	}
	return New(specs...)
}

// New builds a Set from entries, with the same checks as
// Load.
func New(specs ...Spec) (*Set, error) {
	if problems := checkSpecs(specs); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.msg
		}
		return nil, fmt.Errorf("%w: %s", pollwarden.ErrInvalid, strings.Join(msgs, "; "))
	}
	entries := make([]tokenEntry, len(specs))
	for i, s := range specs {
		b, _ := hex.DecodeString(s.SHA256)
		scope := s.Scope
		if scope == "" {
			scope = ScopeOwn
		}
		entries[i].caller = Caller{Actor: pollwarden.Actor{Name: s.Name, Role: s.Role}, Scope: scope}
		copy(entries[i].hash[:], b)
	}
	t := &Set{}
	t.entries.Store(&entries)
	return t, nil
}

// Replace makes t answer as n does from now on (a reloaded tokens file):
// a revoked token stops working at once, without a restart.
func (t *Set) Replace(n *Set) {
	t.entries.Store(n.entries.Load())
}

// specProblem is one problem with entry index (-1: the list as a whole).
type specProblem struct {
	index int
	msg   string
}

func checkSpecs(specs []Spec) []specProblem {
	var out []specProblem
	names, hashes := map[string]int{}, map[string]int{}
	for i, s := range specs {
		label := fmt.Sprintf("tokens[%d] (%s)", i, s.Name)
		add := func(msg string) { out = append(out, specProblem{i, label + ": " + msg}) }
		for _, msg := range checkSpec(s) {
			add(msg)
		}
		if j, dup := names[s.Name]; dup && s.Name != "" {
			add(fmt.Sprintf("name is already used by tokens[%d]", j))
		}
		names[s.Name] = i
		h := strings.ToLower(s.SHA256)
		if j, dup := hashes[h]; dup && h != "" {
			add(fmt.Sprintf("sha256 is the same as tokens[%d] (%s): one token cannot be two people", j, specs[j].Name))
		}
		hashes[h] = i
	}
	if len(specs) == 0 {
		out = append(out, specProblem{-1, "no tokens: nobody could use the API"})
	}
	return out
}

func checkSpec(s Spec) []string {
	var out []string
	if s.Name == "" {
		out = append(out, "name is required")
	}
	if strings.IndexFunc(s.Name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		out = append(out, "name must not contain spaces or control characters")
	}
	if strings.Contains(s.Name, ":") {
		// Local processes own operations as cli:USER and mcp:USER; a token
		// named so would see theirs.
		out = append(out, "name must not contain ':' (names such as cli:alice are kept for local processes)")
	}
	switch s.Role {
	case pollwarden.RoleAgent, pollwarden.RoleApprover, pollwarden.RoleAdmin:
	default:
		out = append(out, fmt.Sprintf("role %q: want agent, approver or admin", s.Role))
	}
	switch s.Scope {
	case "", ScopeAll:
	case ScopeOwn:
		if s.Role == pollwarden.RoleApprover || s.Role == pollwarden.RoleAdmin {
			out = append(out, fmt.Sprintf("scope own: an %s sees every operation; scope applies to agents only", s.Role))
		}
	default:
		out = append(out, fmt.Sprintf("scope %q: want own (the default: the operations this token created) or all", s.Scope))
	}
	if b, err := hex.DecodeString(s.SHA256); err != nil || len(b) != sha256.Size {
		out = append(out, fmt.Sprintf("sha256 must be 64 hex digits (the SHA-256 of the token, never the token), got %d characters", len(s.SHA256)))
	}
	return out
}

// Lookup returns who presents token. The token is hashed first and every
// entry is compared in constant time, so neither the answer's timing nor
// anything kept reveals the token.
func (t *Set) Lookup(token string) (pollwarden.Actor, bool) {
	c, ok := t.Identify(token)
	return c.Actor, ok
}

// Identify is Lookup with what the token's entry lets it see.
func (t *Set) Identify(token string) (Caller, bool) {
	if t == nil || token == "" {
		return Caller{}, false
	}
	sum := sha256.Sum256([]byte(token))
	entries := *t.entries.Load()
	found := -1
	for i := range entries {
		if subtle.ConstantTimeCompare(sum[:], entries[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Caller{}, false
	}
	return entries[found].caller, true
}

// Hash returns the hex SHA-256 to put in a tokens file for token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// parseTokens walks the YAML by hand so that every problem carries its
// line, as contract files do.
func parseTokens(data []byte) ([]Spec, []string) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []string{"empty file: expected tokens: [...]"}
		}
		return nil, []string{"not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, []string{fmt.Sprintf("line %d: expected a mapping with the key tokens", root.Line)}
	}
	var problems []string
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "tokens" {
			problems = append(problems, fmt.Sprintf("line %d: %s: unknown key (want tokens)", k.Line, k.Value))
			continue
		}
		list = v
	}
	if list == nil {
		return nil, append(problems, "tokens: required")
	}
	if list.Kind != yaml.SequenceNode {
		return nil, append(problems, fmt.Sprintf("line %d: tokens: expected a list", list.Line))
	}
	specs := make([]Spec, 0, len(list.Content))
	for i, n := range list.Content {
		s, probs := parseEntry(i, n)
		specs = append(specs, s)
		problems = append(problems, probs...)
	}
	for _, p := range checkSpecs(specs) {
		if p.index >= 0 {
			p.msg = fmt.Sprintf("line %d: %s", list.Content[p.index].Line, p.msg)
		}
		problems = append(problems, p.msg)
	}
	return specs, problems
}

func parseEntry(i int, n *yaml.Node) (Spec, []string) {
	var s Spec
	if n.Kind != yaml.MappingNode {
		return s, []string{fmt.Sprintf("line %d: tokens[%d]: expected {name, role, sha256, scope}", n.Line, i)}
	}
	var problems []string
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if v.Kind != yaml.ScalarNode {
			problems = append(problems, fmt.Sprintf("line %d: tokens[%d].%s: expected a string", v.Line, i, k.Value))
			continue
		}
		switch k.Value {
		case "name":
			s.Name = v.Value
		case "role":
			s.Role = pollwarden.Role(v.Value)
		case "sha256":
			s.SHA256 = v.Value
		case "scope":
			s.Scope = Scope(v.Value)
		default:
			problems = append(problems, fmt.Sprintf("line %d: tokens[%d].%s: unknown key (want name, role, sha256, scope)", k.Line, i, k.Value))
		}
	}
	for k, p := range problems {
		problems[k] = p + entryName(s)
	}
	return s, problems
}

func entryName(s Spec) string {
	if s.Name == "" {
		return ""
	}
	return " (entry " + s.Name + ")"
}
