package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// sigV4Contract signs its status reads with SigV4 (the key id and secret
// from the environment) against base.
func sigV4Contract(base string) string {
	return fmt.Sprintf(`version: 1
name: proc-test
status:
  url: "%s/jobs/{job_id}"
  credential: {kind: aws_sigv4, region: us-east-1, service: textract, access_key_id: "env:PW_AWS_KEY_ID", secret_access_key: "env:PW_AWS_SECRET"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed], expired: [expired]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 3, max_transport_failures: 3, max_rate_limited: 3}
`, base)
}

// TestServeSigV4EchoIsScrubbed is the attack of a provider that echoes the
// SigV4 Authorization header it was sent (its access key id, credential
// scope and signature) in its error, in a state no contract lists and in
// a header: the key id names the account and the signature replays one
// read, so neither may be kept in the record, the story, an answer or a
// webhook.
func TestServeSigV4EchoIsScrubbed(t *testing.T) {
	t.Parallel()
	const keyID = "AKIAPWTESTECHO7KEYID"
	var mu sync.Mutex
	var sent []string
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		sent = append(sent, auth)
		mu.Unlock()
		w.Header().Set("X-Request-Id", "req "+auth)
		w.Header().Set("Content-Type", "application/json")
		echo, _ := json.Marshal(auth)
		switch {
		case strings.HasSuffix(r.URL.Path, "/fail"):
			fmt.Fprintf(w, `{"state":"failed","error":{"message":"denied","authorization":%s}}`, echo)
		default:
			fmt.Fprintf(w, `{"state":%s}`, echo)
		}
	}))
	defer prov.Close()
	dir, cdir, tokens := servedDir(t, sigV4Contract(prov.URL))
	store := filepath.Join(dir, "pw.db")
	var hookMu sync.Mutex
	var hookBodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hookBodies = append(hookBodies, b)
		hookMu.Unlock()
	}))
	defer recv.Close()
	hooks := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(hooks, []byte("webhooks:\n  - name: ops\n    url: "+recv.URL+"/hook\n    secret: env:PW_WEBHOOK_SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, []string{"PW_AWS_KEY_ID=" + keyID, "PW_AWS_SECRET=wJalrXUtnFEMI/K7MDENG/bPxRfiCYPWTESTKEY", "PW_WEBHOOK_SECRET=" + whCanary},
		"serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", tokens, "--webhooks", hooks)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	var answers [][]byte
	for _, job := range []string{"fail", "odd"} {
		call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"sig-`+job+`","contract":"proc-test","job_id":"`+job+`"}`, 201)
	}
	failed := waitPhase(t, base, "sig-fail", "failed")
	odd := waitPhase(t, base, "sig-odd", "escalated")
	for _, op := range []map[string]any{failed, odd} {
		b, _ := json.Marshal(op)
		answers = append(answers, b)
	}
	if !strings.Contains(fmt.Sprint(failed["provider_error"]), "Signature=[REDACTED]") {
		t.Errorf("the echoed header was not kept, scrubbed: %v", failed["provider_error"])
	}
	if st := fmt.Sprint(odd["last_state"]); odd["reason"] != "unknown_state" || !strings.HasPrefix(st, "AWS4-HMAC-SHA256 Credential=[REDACTED]") {
		t.Errorf("odd state: %v %v", odd["reason"], st)
	}
	for _, id := range []string{"sig-fail", "sig-odd"} {
		answers = append(answers, get(t, base, "agent-token", "/v1/operations/"+id+"/audit", "application/json"),
			get(t, base, "agent-token", "/v1/operations/"+id+"/audit", "text/plain"))
	}
	waitFor(t, "a webhook per outcome", func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return len(hookBodies) >= 2
	})
	hookMu.Lock()
	answers = append(answers, hookBodies...)
	hookMu.Unlock()
	answers = append(answers, []byte(runCLI(t, nil, "audit", "export", "--store", store)))

	// What was sent: the key id and each signature; none may be kept.
	mu.Lock()
	leaks := []string{keyID, "aws4_request"}
	sig := regexp.MustCompile(`Signature=([0-9a-f]{64})`)
	for _, a := range sent {
		if m := sig.FindStringSubmatch(a); m != nil {
			leaks = append(leaks, m[1])
		}
	}
	mu.Unlock()
	if len(leaks) < 3 {
		t.Fatalf("the provider saw no signed request: %v", leaks)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pw.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, b)
	}
	for i, a := range answers {
		for _, l := range leaks {
			if bytes.Contains(a, []byte(l)) {
				t.Errorf("answer/file %d holds %q", i, l)
			}
		}
	}
}
