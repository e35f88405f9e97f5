package builtin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestMintedTokenNeverStored runs a whole wait under an OAuth2
// client-credentials contract, through the real controller, prober and
// SQLite store, against a provider that echoes the access token it got
// into every field the contract keeps: neither the minted token nor the
// client secret is anywhere in the database file or the story.
func TestMintedTokenNeverStored(t *testing.T) {
	const secret, minted = "client-secret-canary-31f9a0c2", "minted-token-canary-8e4b7d11"
	var mints, polls atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("client_secret") != secret {
			http.Error(w, `{"error":"invalid_client"}`, 401)
			return
		}
		mints.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, minted)
	}))
	t.Cleanup(tokenSrv.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Request-Id", auth)
		state := "running"
		if polls.Add(1) >= 3 {
			state = "succeeded"
		}
		fmt.Fprintf(w, `{"status":%q,"note":%q,"result":{"url":"https://files.example.com/%s"},"error":{"message":"you sent %s"}}`,
			state, auth, strings.TrimPrefix(auth, "Bearer "), auth)
	}))
	t.Cleanup(api.Close)
	src := fmt.Sprintf(`version: 1
name: minted
status:
  url: %s/jobs/{job_id}
  credential:
    kind: oauth2_client_credentials
    token_url: %s/token
    client_id: env:CLIENT_ID
    client_secret: env:CLIENT_SECRET
    scopes: [api.read]
state:
  path: status
  raw: note
  pending: [running]
  success: [succeeded]
result:
  require: [{path: result.url, kind: url}]
  error_path: error
backoff: {base: 1s, max: 5s}
limits: {deadline: 10m, max_status_requests: 12, max_transport_failures: 3, max_rate_limited: 3}
`, api.URL, tokenSrv.URL)
	c, err := contract.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "pw.db")
	st, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Now()}
	env := map[string]string{"CLIENT_ID": "app", "CLIENT_SECRET": secret}
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})})
	op, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: "op-minted", ProviderJobID: "j1"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := ctl.Wait(context.Background(), ex, op.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := st.EventList(context.Background(), op.ID)
	if err != nil {
		t.Fatal(err)
	}
	story := strings.Join(audit.Story(events, time.UTC), "\n")
	if final.Phase != "succeeded" || polls.Load() != 3 || mints.Load() != 1 {
		t.Fatalf("phase %s after %d polls and %d mints, want succeeded, 3, 1\n%s", final.Phase, polls.Load(), mints.Load(), story)
	}
	if !strings.Contains(string(final.Result), "[REDACTED]") {
		t.Errorf("the echoed token was not redacted from the result %s (is the echo there at all?)", final.Result)
	}
	st.Close()
	var db []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, _ := os.ReadFile(dbPath + suffix)
		db = append(db, b...)
	}
	for _, k := range []string{secret, minted} {
		for where, text := range map[string]string{"story": story, "database": string(db), "record": fmt.Sprintf("%+v", final)} {
			if i := strings.Index(text, k); i >= 0 {
				t.Errorf("%s reached the %s: …%s…", k, where, text[max(0, i-80):min(len(text), i+80)])
			}
		}
	}
}

// TestTokenEndpointFailureIsCountedTransportFailure: a token endpoint that
// fails is retried like an unreachable provider (counted against
// max_transport_failures, detail in the story), and the wait goes on once
// it mints again.
func TestTokenEndpointFailureIsCountedTransportFailure(t *testing.T) {
	var calls atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) <= 2 {
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"error":"temporarily_unavailable"}`))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"tok-after-outage-1234","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(tokenSrv.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status":"succeeded","result":{"url":"https://files.example.com/r"}}`))
	}))
	t.Cleanup(api.Close)
	src := fmt.Sprintf(`version: 1
name: minted
status:
  url: %s/jobs/{job_id}
  credential: {kind: oauth2_client_credentials, token_url: %s/token, client_id: env:CLIENT_ID, client_secret: env:CLIENT_SECRET}
state: {path: status, pending: [running], success: [succeeded]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 1s, max: 5s}
limits: {deadline: 10m, max_status_requests: 12, max_transport_failures: 3, max_rate_limited: 3}
`, api.URL, tokenSrv.URL)
	c, err := contract.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{now: time.Now()}
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: func(k string) (string, bool) { return "value-" + k, true }})})
	op, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: "op-outage", ProviderJobID: "j1"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := ctl.Wait(context.Background(), ex, op.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := st.EventList(context.Background(), op.ID)
	story := strings.Join(audit.Story(events, time.UTC), "\n")
	if final.Phase != "succeeded" || calls.Load() != 3 {
		t.Fatalf("phase %s/%s after %d token requests, want succeeded after 3\n%s", final.Phase, final.Reason, calls.Load(), story)
	}
	if !strings.Contains(story, "answered HTTP 503 (temporarily_unavailable)") {
		t.Errorf("the story does not say what the token endpoint answered:\n%s", story)
	}
}
