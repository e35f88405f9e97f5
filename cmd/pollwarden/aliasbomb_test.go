package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// aliasBomb is a contract of a few hundred bytes whose status.body stands
// for 10^9 values through nine levels of YAML aliases.
const aliasBomb = `a: &a [x,x,x,x,x,x,x,x,x,x]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
version: 1
name: bomb
status: {url: "https://x.example/{job_id}", method: POST, body: *i}
`

// bombLimit is far more than refusing the file takes, far less than
// expanding it: a process still busy after it is killed and the test fails.
const bombLimit = 20 * time.Second

// TestContractCheckRefusesAliasBomb: `contract check` of the alias bomb
// exits 2 at once, naming the alias, instead of expanding it until memory
// runs out.
func TestContractCheckRefusesAliasBomb(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bomb.yaml")
	if err := os.WriteFile(path, []byte(aliasBomb), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bombLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "contract", "check", path)
	cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("contract check of a %d-byte alias bomb was still running after %s", len(aliasBomb), bombLimit)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("contract check: %v, want exit 2: %s", err, out)
	}
	if !strings.Contains(string(out), "bomb.yaml: line 5") || !strings.Contains(string(out), "alias bomb") {
		t.Fatalf("the refusal does not name the file, line and cause: %s", out)
	}
}

// TestServeReloadRefusesAliasBomb: the alias bomb dropped into a running
// daemon's contracts directory and a SIGHUP leave the daemon serving with
// its previous set, the refusal logged.
func TestServeReloadRefusesAliasBomb(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.Script("j1", fp.State("running", nil))
	dir := t.TempDir()
	p := contractsServe(t, dir, srv.URL())
	base := listenAddr(t, p)

	if err := os.WriteFile(filepath.Join(dir, "contracts", "bomb.yaml"), []byte(aliasBomb), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitForWithin(t, bombLimit, "the reload to be refused", func() bool {
		return strings.Contains(p.stderr.String(), "reload refused")
	})
	if !strings.Contains(p.stderr.String(), "alias bomb") {
		t.Fatalf("the refusal does not name its cause: %s", p.stderr.String())
	}
	call(t, base, "agent-token", "POST", "/v1/operations", `{"contract":"proc-test","job_id":"j1"}`, 201)
	call(t, base, "agent-token", "POST", "/v1/operations", `{"contract":"bomb","job_id":"j2"}`, 422)
}

// contractsServe starts serve on a SQLite store in dir with dir/contracts
// holding the proc-test contract and one agent token; killed at the end.
func contractsServe(t *testing.T, dir, provider string) *proc {
	t.Helper()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, provider)
	tokens := "tokens:\n  - {name: build-agent, role: agent, sha256: \"" + sum("agent-token") + "\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}
