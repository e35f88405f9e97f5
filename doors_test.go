package pollwarden_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// controllerActions are the controller's methods that act for a door's
// caller: a door calls the use case in package operations instead, which
// checks the input and who may do what before it calls them.
var controllerActions = []string{"Submit", "SubmitJob", "Decide", "Cancel", "RequestExtension", "FetchResult", "Wait"}

// doorsExempt drive the controller as an embedder does, not for a caller:
// the demo seeds its own scripted operations.
var doorsExempt = []string{"cli/demo.go", "cli/demo_submit.go"}

// TestDoorsCallTheUseCases: no door (the API, MCP, the console, the
// commands) calls an action of the controller directly, so that a rule
// checked in package operations cannot be skipped by one door.
func TestDoorsCallTheUseCases(t *testing.T) {
	for _, dir := range []string{"httpapi", "mcp", "console", "cli"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || slices.Contains(doorsExempt, filepath.ToSlash(f)) {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !slices.Contains(controllerActions, sel.Sel.Name) {
					return true
				}
				recv := string(src[fset.Position(sel.X.Pos()).Offset:fset.Position(sel.X.End()).Offset])
				if strings.HasSuffix(recv, "ctl") || strings.HasSuffix(recv, "Controller") || strings.Contains(recv, "newController(") {
					t.Errorf("%s: %s.%s: call the use case in package operations", fset.Position(call.Pos()), recv, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
