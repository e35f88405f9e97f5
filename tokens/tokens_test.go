package tokens

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

func writeTokens(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTokens(t *testing.T) {
	p := writeTokens(t, `tokens:
  - {name: build-agent, role: agent,    sha256: "`+Hash("a-secret")+`"}
  - {name: alice,       role: approver, sha256: "`+strings.ToUpper(Hash("b-secret"))+`"}
  - name: root
    role: admin
    sha256: `+Hash("c-secret")+`
`)
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]pollwarden.Actor{
		"a-secret": {Name: "build-agent", Role: pollwarden.RoleAgent},
		"b-secret": {Name: "alice", Role: pollwarden.RoleApprover},
		"c-secret": {Name: "root", Role: pollwarden.RoleAdmin},
	} {
		if got, ok := tk.Lookup(token); !ok || got != want {
			t.Errorf("Lookup(%s) = %v, %v; want %v", token, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a-secret ", "A-SECRET", Hash("a-secret")} {
		if _, ok := tk.Lookup(bad); ok {
			t.Errorf("Lookup(%q) found someone", bad)
		}
	}
}

func TestLoadTokensRefused(t *testing.T) {
	h1, h2 := Hash("one"), Hash("two")
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"unknown entry key": {"tokens:\n  - {name: a, role: agent, sha256: " + h1 + ", token: hunter2}\n",
			[]string{"line 2: tokens[0].token: unknown key (want name, role, sha256, scope) (entry a)"}},
		"unknown scope": {"tokens:\n  - {name: a, role: agent, sha256: " + h1 + "}\n  - {name: b, role: agent, sha256: " + h2 + ", scope: everything}\n",
			[]string{`line 3: tokens[1] (b): scope "everything": want own (the default: the operations this token created) or all`}},
		"scope own on an approver": {"tokens:\n  - {name: a, role: approver, sha256: " + h1 + ", scope: own}\n",
			[]string{"line 2: tokens[0] (a): scope own: an approver sees every operation"}},
		"local owner name": {"tokens:\n  - {name: \"cli:alice\", role: agent, sha256: " + h1 + "}\n",
			[]string{"line 2: tokens[0] (cli:alice): name must not contain ':'"}},
		"unknown top key": {"tokens: []\nusers: []\n", []string{"line 2: users: unknown key"}},
		"bad role": {"tokens:\n  - {name: a, role: agent, sha256: " + h1 + "}\n  - {name: b, role: boss, sha256: " + h2 + "}\n",
			[]string{`line 3: tokens[1] (b): role "boss": want agent, approver or admin`}},
		"short hash": {"tokens:\n  - {name: a, role: agent, sha256: abc}\n",
			[]string{"line 2: tokens[0] (a): sha256 must be 64 hex digits", "got 3 characters"}},
		"not hex": {"tokens:\n  - {name: a, role: agent, sha256: " + strings.Repeat("z", 64) + "}\n",
			[]string{"tokens[0] (a): sha256 must be 64 hex digits"}},
		"duplicate name": {"tokens:\n  - {name: a, role: agent, sha256: " + h1 + "}\n  - {name: a, role: admin, sha256: " + h2 + "}\n",
			[]string{"line 3: tokens[1] (a): name is already used by tokens[0]"}},
		"duplicate hash": {"tokens:\n  - {name: a, role: agent, sha256: " + h1 + "}\n  - {name: b, role: admin, sha256: " + strings.ToUpper(h1) + "}\n",
			[]string{"line 3: tokens[1] (b): sha256 is the same as tokens[0] (a)"}},
		"no name":     {"tokens:\n  - {role: agent, sha256: " + h1 + "}\n", []string{"tokens[0] (): name is required"}},
		"empty list":  {"tokens: []\n", []string{"no tokens"}},
		"empty file":  {"", []string{"empty file"}},
		"not a list":  {"tokens: {a: b}\n", []string{"line 1: tokens: expected a list"}},
		"bad yaml":    {"tokens: [\n", []string{"not valid YAML"}},
		"nested name": {"tokens:\n  - {name: [a], role: agent, sha256: " + h1 + "}\n", []string{"tokens[0].name: expected a string"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := writeTokens(t, tc.body)
			_, err := Load(p)
			if !errors.Is(err, pollwarden.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error does not name the file:\n%v", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Error("the error repeats a token-like value")
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}

// TestLoadTokensScope: an agent sees its own operations unless its entry
// says scope: all; approvers and admins see all whatever the file says.
func TestLoadTokensScope(t *testing.T) {
	p := writeTokens(t, `tokens:
  - {name: build-agent, role: agent, sha256: "`+Hash("a")+`"}
  - {name: mine, role: agent, sha256: "`+Hash("b")+`", scope: own}
  - {name: ci, role: agent, sha256: "`+Hash("c")+`", scope: all}
  - {name: alice, role: approver, sha256: "`+Hash("d")+`"}
`)
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	theirs := &pollwarden.Operation{ID: "x", Owner: "someone-else"}
	for token, want := range map[string]struct {
		scope Scope
		all   bool
	}{"a": {ScopeOwn, false}, "b": {ScopeOwn, false}, "c": {ScopeAll, true}, "d": {ScopeOwn, true}} {
		c, ok := tk.Identify(token)
		if !ok || c.Scope != want.scope || c.SeesAll() != want.all || c.Sees(theirs) != want.all {
			t.Errorf("Identify(%s) = %+v, %v: sees all %v, sees another's %v; want scope %s, all %v", token, c, ok, c.SeesAll(), c.Sees(theirs), want.scope, want.all)
		}
		if own := (&pollwarden.Operation{ID: "y", Owner: c.Name}); !c.Sees(own) {
			t.Errorf("%s does not see its own operation", c.Name)
		}
	}
	if (Caller{}).Sees(&pollwarden.Operation{}) || (Caller{}).SeesAll() {
		t.Error("the zero Caller sees an operation")
	}
	if _, ok := (Caller{}).ListOwner(); ok {
		t.Error("the zero Caller may list")
	}
}

func TestLoadTokensListsEveryProblem(t *testing.T) {
	p := writeTokens(t, "tokens:\n  - {name: a, role: boss, sha256: x}\n  - {name: b, role: agent, sha256: y, extra: 1}\n")
	_, err := Load(p)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{`line 2: tokens[0] (a): role "boss"`, "line 2: tokens[0] (a): sha256 must be", "line 3: tokens[1].extra: unknown key", "line 3: tokens[1] (b): sha256 must be"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

// TestTokensReplace: a reload revokes a removed token at once and admits
// a new one, through the same *Set the handler already holds.
func TestTokensReplace(t *testing.T) {
	tk, err := New(Spec{Name: "old", Role: pollwarden.RoleAgent, SHA256: Hash("old-secret")})
	if err != nil {
		t.Fatal(err)
	}
	next, err := New(Spec{Name: "new", Role: pollwarden.RoleApprover, SHA256: Hash("new-secret")})
	if err != nil {
		t.Fatal(err)
	}
	tk.Replace(next)
	if _, ok := tk.Lookup("old-secret"); ok {
		t.Error("a token removed by the reload still works")
	}
	if got, ok := tk.Lookup("new-secret"); !ok || got != (pollwarden.Actor{Name: "new", Role: pollwarden.RoleApprover}) {
		t.Errorf("Lookup(new-secret) = %v, %v after the reload", got, ok)
	}
}
