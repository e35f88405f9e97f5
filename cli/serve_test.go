package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/tokens"
)

const reloadContract = `version: 1
name: %s
status:
  url: "https://api.example.com/jobs/{job_id}"
state: {path: state, pending: [running], success: [done], failure: [failed]}
backoff: {base: 5s, max: 1m}
limits: {deadline: 1h, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func tokensFile(entries ...string) string {
	return "tokens:\n" + strings.Join(entries, "")
}

func tokenEntry(name, role, token string) string {
	return "  - {name: " + name + ", role: " + role + ", sha256: \"" + tokens.Hash(token) + "\"}\n"
}

// TestReloadTokensAndContracts: SIGHUP's reload swaps the tokens the API
// already holds (a removed token stops at once), and a bad file of either
// kind keeps what was loaded before, without stopping the other's reload.
func TestReloadTokensAndContracts(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cdir, "a.yaml"), strings.ReplaceAll(reloadContract, "%s", "a"))
	tpath := filepath.Join(dir, "tokens.yaml")
	writeFile(t, tpath, tokensFile(tokenEntry("bot", "agent", "tok-bot"), tokenEntry("alice", "approver", "tok-alice")))
	set, err := contract.LoadDir(cdir)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := tokens.Load(tpath)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rl := reloadable{set: set, tokens: tokens, tokensPath: tpath}

	// Revoke bot, add carol, add contract b.
	writeFile(t, tpath, tokensFile(tokenEntry("alice", "approver", "tok-alice"), tokenEntry("carol", "admin", "tok-carol")))
	writeFile(t, filepath.Join(cdir, "b.yaml"), strings.ReplaceAll(reloadContract, "%s", "b"))
	rl.reload(log)
	if _, ok := tokens.Lookup("tok-bot"); ok {
		t.Error("a token removed from the file still works after the reload")
	}
	if who, ok := tokens.Lookup("tok-carol"); !ok || who.Role != pollwarden.RoleAdmin {
		t.Errorf("new token: %v %v", who, ok)
	}
	if got := strings.Join(set.Names(), ","); got != "a,b" {
		t.Errorf("contracts after reload: %s", got)
	}

	// A broken tokens file keeps the previous tokens; the contracts still reload.
	writeFile(t, tpath, "tokens:\n  - {name: x, role: wizard, sha256: nothex}\n")
	if err := os.Remove(filepath.Join(cdir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	rl.reload(log)
	if _, ok := tokens.Lookup("tok-alice"); !ok {
		t.Error("a bad tokens file locked out a token that was valid before")
	}
	if got := strings.Join(set.Names(), ","); got != "a" {
		t.Errorf("contracts after the second reload: %s", got)
	}
	if !strings.Contains(logs.String(), "tokens reload refused") || !strings.Contains(logs.String(), "wizard") {
		t.Errorf("the refused tokens file is not reported with its problem:\n%s", logs.String())
	}
}
