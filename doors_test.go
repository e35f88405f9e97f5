package pollwarden_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/build/constraint"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// controllerActions are the controller's methods that act for a caller:
// a door calls the use case in package operations instead, which checks
// the input and who may do what before it calls them.
var controllerActions = []string{"Create", "Start", "SubmitJob", "SubmitNew", "DriveSubmission", "Decide", "Cancel", "RequestExtension", "FetchResult", "Wait", "Interrupted", "Callback"}

// storeReads are the store's reads that a use case offers (Get, List,
// Events, AuditHead, VerifyAudit, PhaseCounts in package operations, which
// apply who may see what): a command that called them directly would
// decide visibility on its own.
var storeReads = []string{"OperationGet", "OperationList", "EventList", "AuditHead"}

// cliExempt drive the core as an embedder does, not for a caller, or read
// the chain for what no use case offers, each with why.
var cliExempt = map[string]string{
	"cli/demo.go":        "the demo seeds its own scripted operations as an embedder does",
	"cli/demo_submit.go": "the demo seeds its own scripted operations as an embedder does",
}

// TestDoorsCallTheUseCases: the commands (package cli, the composition
// root, which alone may build a controller) never call an action of the
// controller or read the store where a use case does it, so that a rule
// checked in package operations cannot be skipped by one door. It reads
// the types, not the names: a call counts when its receiver IS a
// *controller.Controller or a store. The other doors cannot hold either
// (TestDependencies: they import neither).
func TestDoorsCallTheUseCases(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	paths, err := filepath.Glob("cli/*.go")
	if err != nil || len(paths) == 0 {
		t.Fatalf("cli: no Go files (%v)", err)
	}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if !buildsByDefault(f) {
			continue
		}
		files = append(files, f)
	}
	exports := exportData(t, "./cli")
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(file)
	})}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	if _, err := conf.Check(module+"/cli", fset, files, info); err != nil {
		t.Fatalf("type-checking cli: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.ToSlash(fset.Position(f.Pos()).Filename)
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			s, ok := info.Selections[sel]
			if !ok || s.Kind() != types.MethodVal || s.Obj().Pkg() == nil {
				return true
			}
			recv := types.TypeString(s.Recv(), nil)
			m, from := sel.Sel.Name, s.Obj().Pkg().Path()
			var what string
			switch {
			case from == ctlPkg && slices.Contains(controllerActions, m):
				what = "acts through the controller"
			case isStore(from) && slices.Contains(storeReads, m):
				what = "reads the store"
			default:
				return true
			}
			seen[name] = true
			if _, ok := cliExempt[name]; !ok {
				t.Errorf("%s: %s.%s %s: call the use case in package operations", fset.Position(sel.Pos()), recv, m, what)
			}
			return true
		})
	}
	for name := range cliExempt {
		if !seen[name] {
			t.Errorf("cliExempt lists %s, which no longer acts or reads around the use cases: remove it", name)
		}
	}
}

// isStore reports whether a method is declared by a store: the root's
// Store interface (also when a wider interface embeds it) or a driver.
func isStore(pkg string) bool {
	return pkg == root || pkg == module+"/sqlite" || pkg == module+"/postgres" || pkg == module+"/internal/sqlstore"
}

// buildsByDefault drops files behind a build tag that is off by default
// (cli's plotting, behind its own tag).
func buildsByDefault(f *ast.File) bool {
	for _, c := range f.Comments {
		for _, l := range c.List {
			if expr, err := constraint.Parse(l.Text); err == nil {
				return expr.Eval(func(string) bool { return false })
			}
		}
	}
	return true
}

// exportData compiles pattern's dependencies and returns each one's
// export data file, by import path, for the type checker.
func exportData(t *testing.T, pattern string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Export", pattern)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	m := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		m[p.ImportPath] = p.Export
	}
	return m
}
