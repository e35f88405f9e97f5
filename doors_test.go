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
var controllerActions = []string{"Submit", "SubmitNew", "SubmitJob", "Decide", "Cancel", "RequestExtension", "FetchResult", "Wait"}

// storeReads are the store's reads that a use case offers (Get, List,
// Events in package operations, which apply who may see what): a door
// that called them directly would decide visibility on its own.
var storeReads = []string{"OperationGet", "OperationList", "EventList"}

// doorsExempt drive the controller as an embedder does, not for a caller:
// the demo seeds its own scripted operations.
var doorsExempt = []string{"cli/demo.go", "cli/demo_submit.go"}

// readsExempt are the store reads made for no caller, each with why.
var readsExempt = map[string]string{}

// TestDoorsCallTheUseCases: no door (the API, MCP, the console, the
// commands) calls an action of the controller or reads the store where a
// use case does it, so that a rule checked in package operations (who
// sees what, the bounds of a list) cannot be skipped by one door.
func TestDoorsCallTheUseCases(t *testing.T) {
	used := map[string]bool{}
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
				if !ok {
					return true
				}
				if slices.Contains(storeReads, sel.Sel.Name) {
					key := filepath.ToSlash(f) + ":" + sel.Sel.Name
					used[key] = true
					if _, exempt := readsExempt[key]; !exempt {
						t.Errorf("%s: %s reads the store: call Get, List or Events in package operations", fset.Position(call.Pos()), sel.Sel.Name)
					}
					return true
				}
				if !slices.Contains(controllerActions, sel.Sel.Name) {
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
	for key := range readsExempt {
		if !used[key] {
			t.Errorf("readsExempt lists %s, which no longer reads the store: remove it", key)
		}
	}
}
