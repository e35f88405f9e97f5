package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestServeRevokedTokenIsMintedAgain is the attack of a token endpoint
// that claims its tokens live 68 years (expires_in 2147483647) and a
// provider that then revokes the one it handed out: every later operation
// under the contract escalated authorization_denied with the cached token
// until a restart. A 401 drops the token, so the next operation mints a
// new one and goes on.
func TestServeRevokedTokenIsMintedAgain(t *testing.T) {
	t.Parallel()
	var mints atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := mints.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"minted-%d","token_type":"Bearer","expires_in":2147483647}`, n)
	}))
	defer tokenSrv.Close()
	var mu sync.Mutex
	revoked := map[string]bool{}
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		bad := revoked[tok]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if bad || tok == "" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"token revoked"}`)
			return
		}
		fmt.Fprint(w, `{"state":"succeeded","result":{"url":"https://files.example.com/r.csv"}}`)
	}))
	defer prov.Close()
	c := strings.Replace(procContract(prov.URL),
		`  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}`,
		`  credential: {kind: oauth2_client_credentials, token_url: "`+tokenSrv.URL+`/token", client_id: "env:PROC_TOKEN", client_secret: "env:PROC_TOKEN"}`, 1)
	if !strings.Contains(c, "oauth2_client_credentials") {
		t.Fatal("the credential line was not replaced")
	}
	dir, cdir, tokens := servedDir(t, c)
	p := startEnv(t, nil, "serve", "--listen", "127.0.0.1:0", "--store", dir+"/pw.db", "--contracts", cdir, "--tokens", tokens)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	create := func(id string) {
		call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"`+id+`","contract":"proc-test","job_id":"`+id+`"}`, 201)
	}
	create("tok-1")
	waitPhase(t, base, "tok-1", "succeeded")
	mu.Lock()
	revoked["minted-1"] = true
	mu.Unlock()
	create("tok-2")
	if op := waitPhase(t, base, "tok-2", "escalated"); op["reason"] != "authorization_denied" {
		t.Fatalf("the revoked token's operation: %v", op)
	}
	create("tok-3")
	var op map[string]any
	waitFor(t, "tok-3 to end or escalate", func() bool {
		op = call(t, base, "agent-token", "GET", "/v1/operations/tok-3", "", 200)
		return op["phase"] == "succeeded" || op["phase"] == "escalated"
	})
	if op["phase"] != "succeeded" {
		t.Fatalf("the next operation after the refusal: %s %s", op["phase"], op["reason"])
	}
	if n := mints.Load(); n != 2 {
		t.Fatalf("%d tokens minted, want 2 (one more after the 401)", n)
	}
}
