package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// daemonRig is a real serve process over a SQLite store in a temporary
// directory, with an agent and an approver token, for the hardening tests.
type daemonRig struct {
	dir, cdir, store string
	srv              *fp.Server
	args             []string
	p                *proc
	base             string
}

// startDaemon writes the proc-test contract, the tokens file and starts
// serve with extra flags.
func startDaemon(t *testing.T, extra ...string) *daemonRig {
	t.Helper()
	r := &daemonRig{srv: fp.New(), dir: t.TempDir()}
	t.Cleanup(r.srv.Close)
	r.srv.RequireToken(canary)
	r.cdir = filepath.Join(r.dir, "contracts")
	if err := os.Mkdir(r.cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, r.cdir, r.srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(filepath.Join(r.dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	r.store = filepath.Join(r.dir, "pw.db")
	r.args = append([]string{"serve", "--listen", "127.0.0.1:0", "--store", r.store,
		"--contracts", r.cdir, "--tokens", filepath.Join(r.dir, "tokens.yaml")}, extra...)
	r.restart(t)
	return r
}

// restart starts serve again with the same flags (after the last one
// stopped), on a new port.
func (r *daemonRig) restart(t *testing.T) {
	t.Helper()
	p := start(t, r.args...)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	r.p = p
	r.base = listenAddr(t, p)
}
