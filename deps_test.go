package pollwarden_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The dependency rules, checked on what the go command resolves (in the
// manner of tailscale's tstest/deptest), so that a stray import fails a
// test instead of waiting for a review.
const (
	module     = "github.com/pollwarden/pollwarden"
	root       = module
	policyPkg  = module + "/policy"
	binary     = module + "/cmd/pollwarden"
	mcpPkg     = module + "/mcp"
	httpapiPkg = module + "/httpapi"
	ctlPkg     = module + "/controller"
	proberPkg  = module + "/prober"
	tracingPkg = module + "/tracing"
	otel       = "go.opentelemetry.io/"
)

// doorPkgs are the doors that a process hands its one operations.Service
// (package cli is the composition root that builds it), and
// doorsMayNotImport is the core they must reach only through it: a door
// that imported the controller or a store could act or read around the
// use cases' rules.
var (
	doorPkgs          = []string{httpapiPkg, module + "/console", mcpPkg}
	doorsMayNotImport = []string{ctlPkg, module + "/internal/sqlstore", module + "/sqlite", module + "/postgres",
		proberPkg, module + "/webhook"}
)

// otelSDK is the part of OpenTelemetry that only package tracing (and
// the binary through it) may link: the SDK and the exporters. The
// controller and the prober trace with the API alone.
var otelSDK = []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/"}

func isOtelSDK(path string) bool {
	return slices.ContainsFunc(otelSDK, func(p string) bool { return strings.HasPrefix(path, p) })
}

// policyMayNotImport is what the decision core must not touch: files,
// sockets, HTTP and databases are read at the edge and reach it as
// values. It is checked on the direct imports of policy and of every
// package of this module under it; fmt itself imports os, so a transitive
// check of os or io/fs could never pass.
var policyMayNotImport = []string{"os", "net", "net/http", "database/sql", "io/fs"}

// policyMayNotLink is checked on everything policy links.
var policyMayNotLink = []string{"net", "net/http", "database/sql"}

type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// goList runs `go list -deps -json` on patterns and returns every package
// it reports, by import path.
func goList(t *testing.T, tags string, patterns ...string) map[string]listed {
	t.Helper()
	args := []string{"list", "-deps", "-json"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// TestDependencies: the root package links only the standard library;
// policy touches no files, sockets, HTTP or databases, and no
// OpenTelemetry; only package tracing links the OpenTelemetry SDK; the
// pollwarden binary links neither the testing package, the plotting
// library, River nor gRPC; the MCP door does not depend on the HTTP API; the
// doors import no controller, store, prober or webhook package.
func TestDependencies(t *testing.T) {
	pkgs := goList(t, "", ".", "./policy", "./cmd/pollwarden", "./mcp", "./httpapi", "./console", "./controller", "./prober", "./tracing")
	get := func(path string) listed {
		p, ok := pkgs[path]
		if !ok || len(p.Deps) == 0 {
			t.Fatalf("go list did not report %s with its dependencies", path)
		}
		return p
	}

	t.Run("root links only the standard library", func(t *testing.T) {
		for _, d := range get(root).Deps {
			if !pkgs[d].Standard {
				t.Errorf("the root package links %s", d)
			}
		}
	})

	t.Run("policy reads no files, sockets, HTTP or databases", func(t *testing.T) {
		p := get(policyPkg)
		ours := []string{policyPkg}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module) {
				ours = append(ours, d)
			}
			if slices.Contains(policyMayNotLink, d) || strings.HasPrefix(d, otel) {
				t.Errorf("policy links %s", d)
			}
		}
		for _, o := range ours {
			for _, imp := range pkgs[o].Imports {
				if slices.Contains(policyMayNotImport, imp) {
					t.Errorf("%s (under policy) imports %s", o, imp)
				}
			}
		}
	})

	t.Run("the binary links no testing, no plotting and no River", func(t *testing.T) {
		// River is the bench's yardstick (go run ./bench), never part of
		// what users run.
		for _, d := range get(binary).Deps {
			if d == "testing" || strings.HasPrefix(d, "testing/") || strings.HasPrefix(d, "gonum.org/") ||
				strings.HasPrefix(d, "github.com/riverqueue/") {
				t.Errorf("cmd/pollwarden links %s", d)
			}
		}
	})

	t.Run("the binary links no gRPC", func(t *testing.T) {
		// The OTLP exporter is pollwarden's own (tracing/otlp.go): the
		// OpenTelemetry one brings gRPC, genproto and grpc-gateway, a
		// transport pollwarden never uses (docs/BENCHMARKS.md).
		for _, d := range get(binary).Deps {
			if strings.HasPrefix(d, "google.golang.org/grpc") || strings.HasPrefix(d, "google.golang.org/genproto/") ||
				strings.HasPrefix(d, "github.com/grpc-ecosystem/") || strings.HasPrefix(d, "go.opentelemetry.io/proto/otlp/collector/") {
				t.Errorf("cmd/pollwarden links %s", d)
			}
		}
	})

	t.Run("mcp does not depend on httpapi", func(t *testing.T) {
		if slices.Contains(get(mcpPkg).Deps, httpapiPkg) {
			t.Errorf("mcp links %s", httpapiPkg)
		}
	})

	t.Run("doors reach the core only through operations", func(t *testing.T) {
		for _, door := range doorPkgs {
			get(door)
			for path, p := range pkgs {
				if path != door && !strings.HasPrefix(path, door+"/") {
					continue
				}
				for _, imp := range p.Imports {
					if slices.Contains(doorsMayNotImport, imp) {
						t.Errorf("%s imports %s: take what it needs from the operations.Service the process hands it", path, imp)
					}
				}
			}
		}
	})

	t.Run("only tracing links the OpenTelemetry SDK and exporters", func(t *testing.T) {
		for _, p := range []string{ctlPkg, proberPkg, mcpPkg, httpapiPkg} {
			for _, d := range get(p).Deps {
				if isOtelSDK(d) {
					t.Errorf("%s links %s", p, d)
				}
			}
		}
	})

	// The checks above pass on an empty answer too; this one shows that
	// go list's answer holds what they look for.
	t.Run("the checker sees a known import", func(t *testing.T) {
		if !slices.Contains(get(tracingPkg).Deps, "go.opentelemetry.io/otel/sdk/trace") ||
			!slices.Contains(get(ctlPkg).Deps, "go.opentelemetry.io/otel/trace") {
			t.Error("go list's answer lacks OpenTelemetry imports that exist: the tracing check would see nothing")
		}
		if !slices.Contains(get(httpapiPkg).Imports, "net/http") || !slices.Contains(get(binary).Deps, policyPkg) ||
			!slices.Contains(get(module+"/operations").Imports, ctlPkg) {
			t.Error("go list's answer lacks imports that exist: the checks above would see nothing")
		}
	})
}
