package pollwarden_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citesOutside matches what a user cannot look up from a message: a rule
// number (the rules are explained in words; docs/rules.md is for readers
// of the code) and the documents the project was built from, which are
// not in the repository.
var citesOutside = regexp.MustCompile(`\bR(?:[1-9]|1[0-9]|2[0-7])\b|perf-anchors|SPEC\.md|the specification's`)

// TestMessagesCiteNoRule: no string in the program (error messages, help,
// MCP descriptions, log lines) and no description in the OpenAPI document
// cites a rule number or a file outside the repository. Comments and docs
// keep their Rn references.
func TestMessagesCiteNoRule(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if m := citesOutside.FindString(lit.Value); m != "" {
					t.Errorf("%s: a string cites %q: %.120s", fset.Position(lit.Pos()), m, lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	openapi, err := os.ReadFile(filepath.Join("httpapi", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(openapi), "\n") {
		if m := citesOutside.FindString(line); m != "" {
			t.Errorf("httpapi/openapi.json:%d cites %q", i+1, m)
		}
	}
}
