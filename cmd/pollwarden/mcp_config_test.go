package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// hostServer is one entry of an MCP host's "mcpServers": a command to
// start (stdio) or a URL with headers (streamable HTTP).
type hostServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// docHostConfigs returns the "pollwarden" entry of every JSON block of
// docs/mcp.md that configures an MCP host, in order.
func docHostConfigs(t *testing.T) []hostServer {
	t.Helper()
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []hostServer
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1) {
		var cfg struct {
			MCPServers map[string]hostServer `json:"mcpServers"`
		}
		dec := json.NewDecoder(strings.NewReader(string(m[1])))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			t.Fatalf("a JSON block of docs/mcp.md is not a host configuration this test knows: %v\n%s", err, m[1])
		}
		s, ok := cfg.MCPServers["pollwarden"]
		if !ok {
			t.Fatalf("a host configuration without a pollwarden server:\n%s", m[1])
		}
		out = append(out, s)
	}
	return out
}

// TestMCPHostConfigFromDocs checks that the host configurations in
// docs/mcp.md work as written: "an MCP host configured from the docs can
// watch a job to its outcome". For the stdio one it starts the command
// with the given arguments and environment, as a host would (this test
// binary plays "pollwarden", and /home/me is a fresh temporary home whose
// state directory does not exist yet); for the HTTP one it connects to a
// running `pollwarden serve` with the given URL (its host and port those
// serve listens on by default, replaced by the test's) and headers (the
// placeholder token replaced by an agent token). Through each, with the
// official SDK client, it watches a job on the fake provider to success;
// the provider only accepts the credential given in the configuration's
// env.
func TestMCPHostConfigFromDocs(t *testing.T) {
	t.Parallel()
	cfgs := docHostConfigs(t)
	if len(cfgs) != 2 || cfgs[0].Command == "" || cfgs[1].URL == "" {
		t.Fatalf("docs/mcp.md should configure a host for stdio, then for HTTP; found %+v", cfgs)
	}
	stdio, web := cfgs[0], cfgs[1]

	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("exp_1", fp.State("running", nil), fp.Succeeded("https://files.example.com/exp_1.csv"))
	srv.Script("exp_2", fp.State("running", nil), fp.Succeeded("https://files.example.com/exp_2.csv"))

	t.Run("stdio", func(t *testing.T) {
		if stdio.Command != "pollwarden" || len(stdio.Args) == 0 || stdio.Args[0] != "mcp" {
			t.Fatalf("the stdio configuration does not start `pollwarden mcp`: %+v", stdio)
		}
		home := t.TempDir()
		env := []string{"HOME=" + home, "XDG_STATE_HOME=", "POLLWARDEN_STORE="}
		for k, v := range stdio.Env {
			if v != "…" {
				t.Fatalf("env %s has a value %q in the docs; expected the placeholder", k, v)
			}
			env = append(env, k+"="+canary)
		}
		var args []string
		contracts := ""
		for i, a := range stdio.Args {
			a = strings.Replace(a, "/home/me", home, 1)
			if i > 0 && stdio.Args[i-1] == "--contracts" {
				contracts = a
			}
			args = append(args, a)
		}
		if contracts == "" {
			t.Fatalf("no --contracts in %v", stdio.Args)
		}
		// The user writes their contracts; the docs' contract names its
		// credential as the env the configuration gives.
		writeDocContract(t, contracts, srv.URL(), stdio.Env)
		h := startMCP(t, args, env)
		_, w, isErr := h.call("watch_job", `{"contract": "report-export", "job_id": "exp_1"}`)
		if isErr || w["phase"] != "waiting" {
			t.Fatalf("watch_job: %v", w)
		}
		watchToOutcome(t, func(name, args string) map[string]any {
			_, m, isErr := h.call(name, args)
			if isErr {
				t.Fatalf("%s: tool error", name)
			}
			return m
		}, w["operation_id"].(string))
		// The default store the docs describe.
		if _, err := os.Stat(filepath.Join(home, ".local", "state", "pollwarden", "pollwarden.db")); err != nil {
			t.Errorf("the store is not where docs/mcp.md says: %v", err)
		}
	})

	t.Run("http", func(t *testing.T) {
		u, err := url.Parse(web.URL)
		if err != nil || web.Type != "http" || u.Path != "/mcp" {
			t.Fatalf("the HTTP configuration: %+v", web)
		}
		// The docs' host and port are serve's default --listen.
		help := runCLI(t, nil, "serve", "--help")
		if !strings.Contains(help, `"`+u.Host+`"`) {
			t.Fatalf("serve --help does not give %s as the default --listen:\n%s", u.Host, help)
		}
		dir := t.TempDir()
		cdir := filepath.Join(dir, "contracts")
		writeDocContract(t, cdir, srv.URL(), stdio.Env)
		tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
		if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startWith(t, []string{"EXPORT_API_TOKEN=" + canary}, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
			"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
		defer p.cmd.Process.Kill()
		base := listenAddr(t, p)
		endpoint := strings.Replace(web.URL, "http://"+u.Host, base, 1)
		headers := map[string]string{}
		for k, v := range web.Headers {
			headers[k] = strings.Replace(v, "<agent token>", "agent-token", 1)
		}
		client := sdk.NewClient(&sdk.Implementation{Name: "config-test", Version: "v0"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: withHeaders{headers, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("connect with the docs' URL and headers: %v", err)
		}
		defer session.Close()
		tool := func(name, args string) map[string]any {
			t.Helper()
			res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %v", name, err, res)
			}
			b, _ := json.Marshal(res)
			if strings.Contains(string(b), canary) {
				t.Fatal("the canary secret crossed the MCP boundary")
			}
			m, _ := res.StructuredContent.(map[string]any)
			return m
		}
		w := tool("watch_job", `{"contract": "report-export", "job_id": "exp_2"}`)
		watchToOutcome(t, tool, w["operation_id"].(string))
	})
}

// watchToOutcome calls wait_job until the operation leaves waiting and
// checks that it succeeded.
func watchToOutcome(t *testing.T, tool func(name, args string) map[string]any, id string) {
	t.Helper()
	for range 10 {
		m := tool("wait_job", fmt.Sprintf(`{"operation_id": %q, "max_wait_seconds": 20}`, id))
		if m["phase"] == "waiting" {
			continue
		}
		if m["phase"] != "succeeded" {
			t.Fatalf("outcome %v", m)
		}
		return
	}
	t.Fatalf("operation %s still waiting", id)
}

// writeDocContract writes, in dir, the report-export contract of the
// docs (credential env:EXPORT_API_TOKEN) against the fake provider; env
// is the configuration's, which must give that credential.
func writeDocContract(t *testing.T, dir, base string, env map[string]string) {
	t.Helper()
	if _, ok := env["EXPORT_API_TOKEN"]; !ok || len(env) != 1 {
		t.Fatalf("the configuration's env %v should give the contract's credential EXPORT_API_TOKEN", env)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := strings.ReplaceAll(transcriptContract, "{{URL}}", base)
	if err := os.WriteFile(filepath.Join(dir, "report-export.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
}

// withHeaders sets a host configuration's headers on every request.
type withHeaders struct {
	h    map[string]string
	next http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.h {
		r.Header.Set(k, v)
	}
	return w.next.RoundTrip(r)
}

// startWith starts the binary with args and extra environment.
func startWith(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Env = append(append(os.Environ(), "PW_TEST_BE_MAIN=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCLI runs the binary to its end with extra environment, requires exit
// code 0 and returns its stdout.
func runCLI(t *testing.T, env []string, args ...string) string {
	t.Helper()
	p := startWith(t, env, args...)
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("pollwarden %v: exit %d: %s", args, code, p.stderr.String())
	}
	return p.stdout.String()
}
