package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// whCanaryKey is the webhook signing key; whCanary, the secret as the
// environment holds it, must reach no file, log or answer.
const whCanaryKey = "wh-canary-Lm2Zt4Qx9-signing-key"

var whCanary = "whsec_" + base64.StdEncoding.EncodeToString([]byte(whCanaryKey))

// whVerify checks a Standard Webhooks signature independently of package
// webhook: HMAC-SHA256 over "{id}.{timestamp}.{body}" with the decoded key.
func whVerify(id, ts string, body []byte, header string) bool {
	mac := hmac.New(sha256.New, []byte(whCanaryKey))
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(header) {
		if hmac.Equal([]byte(s), []byte("v1,"+want)) {
			return true
		}
	}
	return false
}

// failedAttempts reads the webhook ids of failed attempts from serve's
// JSON log lines, by operation.
func failedAttempts(stderr string) map[string]string {
	ids := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		var l struct{ Msg, Webhook_ID, Operation_ID string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "webhook attempt failed" {
			ids[l.Operation_ID] = l.Webhook_ID
		}
	}
	return ids
}

// TestServeWebhooksSurviveKill9: the receiver is down while one operation
// escalates and another succeeds; serve is killed with SIGKILL; with the
// receiver up and serve restarted, both webhooks arrive, correctly signed,
// under the webhook-ids of the failed attempts. The signing secret reaches
// neither the store, the logs nor an API answer.
func TestServeWebhooksSurviveKill9(t *testing.T) {
	t.Parallel()
	secrets := []string{"PW_WEBHOOK_SECRET=" + whCanary}
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))
	srv.Script("ok", fp.State("running", nil), fp.Succeeded("https://files.example.com/r.csv"))
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	// A loopback address with nothing listening: the receiver is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recvAddr := ln.Addr().String()
	ln.Close()
	hooks := fmt.Sprintf(`webhooks:
  - name: ops
    url: http://%s/hook
    secret: env:PW_WEBHOOK_SECRET
retry: {base: 100ms, max: 300ms, attempts: 1000}
timeout: 1s
`, recvAddr)
	if err := os.WriteFile(filepath.Join(dir, "webhooks.yaml"), []byte(hooks), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--webhooks", filepath.Join(dir, "webhooks.yaml")}

	p1 := startEnv(t, secrets, args...)
	defer p1.cmd.Process.Kill()
	base := listenAddr(t, p1)
	var answers []any
	answers = append(answers, call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"hook-esc","contract":"proc-test","job_id":"slow","max_status_requests":2}`, 201))
	answers = append(answers, call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"hook-ok","contract":"proc-test","job_id":"ok"}`, 201))
	answers = append(answers, waitPhase(t, base, "hook-esc", "escalated"), waitPhase(t, base, "hook-ok", "succeeded"))
	var earlier map[string]string
	waitFor(t, "failed attempts of both webhooks", func() bool {
		earlier = failedAttempts(p1.stderr.String())
		return earlier["hook-esc"] != "" && earlier["hook-ok"] != ""
	})
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.cmd.Wait()

	// The receiver comes up on the address the file names.
	var mu sync.Mutex
	type hit struct {
		id, typ, op string
		valid       bool
	}
	var hits []hit
	rl, err := net.Listen("tcp", recvAddr)
	if err != nil {
		t.Fatalf("the receiver's address was taken meanwhile: %v", err)
	}
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Type string
			Data struct{ Operation_ID string }
		}
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		hits = append(hits, hit{r.Header.Get("webhook-id"), body.Type, body.Data.Operation_ID,
			r.URL.Path == "/hook" && whVerify(r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), b, r.Header.Get("webhook-signature"))})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go recv.Serve(rl)
	defer recv.Close()

	p2 := startEnv(t, secrets, args...)
	defer p2.cmd.Process.Kill()
	base = listenAddr(t, p2)
	waitFor(t, "both webhooks to arrive", func() bool {
		mu.Lock()
		defer mu.Unlock()
		got := map[string]bool{}
		for _, h := range hits {
			got[h.op] = true
		}
		return got["hook-esc"] && got["hook-ok"]
	})
	answers = append(answers, call(t, base, "agent-token", "GET", "/v1/operations/hook-ok", "", 200))
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p2.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM: %s", code, p2.stderr.String())
	}

	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{"hook-esc": "operation.escalated", "hook-ok": "operation.succeeded"}
	for _, h := range hits {
		if !h.valid || want[h.op] != h.typ || h.id != earlier[h.op] {
			t.Errorf("webhook %+v: want a valid signature, type %s and the earlier attempts' id %s", h, want[h.op], earlier[h.op])
		}
	}
	// R27 for the signing secret: files (the store, its WAL), logs, answers.
	ans, _ := json.Marshal(answers)
	texts := map[string][]byte{"API answers": ans, "serve output": []byte(p1.stdout.String() + p1.stderr.String() + p2.stdout.String() + p2.stderr.String())}
	files, _ := filepath.Glob(filepath.Join(dir, "pw.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Base(f)] = b
	}
	if len(files) == 0 {
		t.Fatal("no store file to check")
	}
	for where, b := range texts {
		for _, s := range []string{whCanary, whCanaryKey, strings.TrimPrefix(whCanary, "whsec_")} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the webhook signing secret reached %s", where)
			}
		}
	}
	assertNoCanary(t, dir, p1, p2)
}

// A bad webhooks file, or a signing secret that is not there, refuses to
// start (exit 2) with the problem named and nothing stored.
func TestServeWebhooksRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, "http://127.0.0.1:1")
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	short := []string{"PW_WEBHOOK_SHORT=whsec_" + base64.StdEncoding.EncodeToString([]byte("too-short"))}
	for name, c := range map[string]struct{ file, want string }{
		"unknown key": {"webhooks:\n  - {name: a, url: 'https://h.example/x', secret: 'env:PW_X', colour: red}\n",
			"line 2: webhooks[0].colour: unknown key"},
		"bad url": {"webhooks:\n  - name: a\n    url: /relative\n    secret: env:PW_X\n",
			"line 3: webhooks[0].url: must be an absolute http:// or https:// URL"},
		"unset secret": {"webhooks:\n  - {name: ops, url: 'https://h.example/x', secret: 'env:PW_WEBHOOK_UNSET'}\n",
			"endpoint ops: credential env:PW_WEBHOOK_UNSET is not set"},
		"not a key": {"webhooks:\n  - {name: ops, url: 'https://h.example/x', secret: 'env:PW_WEBHOOK_SHORT'}\n",
			"endpoint ops: signing secret env:PW_WEBHOOK_SHORT must decode to 24 to 64 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(f, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, "never.db")
			p := startEnv(t, short, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir,
				"--tokens", filepath.Join(dir, "tokens.yaml"), "--webhooks", f)
			if code := p.exitCode(t); code != 2 || !strings.Contains(p.stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, p.stderr.String(), c.want)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Fatalf("a refused start created the store: %v", err)
			}
		})
	}
}
