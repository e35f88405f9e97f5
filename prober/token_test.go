package prober

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

const (
	clientSecretCanary = "cs-canary-9d2f41e07a"
	tokenCanary        = "at-canary-5be08c13"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// echoProvider answers with what it was sent, as a careless provider might:
// the Authorization header in the body, an error and a header.
func echoProvider(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	w.Header().Set("X-Request-Id", "req "+auth)
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{"state": "running", "error": map[string]string{"seen": auth}})
	_, _ = w.Write(b)
}

// tokenEndpoint mints tokenCanary-N for the right client and secret and
// echoes the secret in its refusal otherwise.
func tokenEndpoint(t *testing.T, minted *atomic.Int32, expiresIn int) (string, *recorder) {
	rc, base := serve(t, "login.test", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_id") != "app-1" ||
			r.PostForm.Get("client_secret") != clientSecretCanary || r.PostForm.Get("scope") != "https://cognitiveservices.azure.com/.default" {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":"secret %s is wrong"}`, r.PostForm.Get("client_secret"))
			return
		}
		n := minted.Add(1)
		fmt.Fprintf(w, `{"access_token":"%s-%d","token_type":"Bearer","expires_in":%d}`, tokenCanary, n, expiresIn)
	})
	return base + "/tenant-1/oauth2/v2.0/token", rc
}

func oauthContract(apiBase, tokenURL string) *pollwarden.ContractSpec {
	c := testContract(apiBase)
	c.Status.Credential = &pollwarden.Credential{Kind: pollwarden.CredentialOAuth2, Header: "Authorization", Scheme: "Bearer",
		Ref: "env:CLIENT_SECRET", ClientID: "env:CLIENT_ID", TokenURL: tokenURL, Scopes: []string{"https://cognitiveservices.azure.com/.default"}}
	return c
}

// noCanary fails when any canary is in what the prober hands back.
func noCanary(t *testing.T, c *pollwarden.ContractSpec, resp Response, canaries ...string) {
	t.Helper()
	c.State.Path, c.State.Pending, c.Result.ErrorPath = "state", []string{"running"}, "error"
	facts := resp.Facts(extractor(t, c))
	all := fmt.Sprintf("%+v %+v %s", resp, facts, facts.Error)
	for _, k := range canaries {
		if strings.Contains(all, k) {
			t.Errorf("canary %s reached the answer: %s", k, all)
		}
	}
}

func TestOAuth2TokenMintedOnceReusedAndRefreshed(t *testing.T) {
	var minted atomic.Int32
	tokenURL, _ := tokenEndpoint(t, &minted, 3600)
	api, base := serve(t, "api.test", echoProvider)
	clk := &clock{t: time.Now()}
	p := New(Options{Transport: testTransport(), Now: clk.now,
		Getenv: func(k string) (string, bool) {
			v, ok := map[string]string{"CLIENT_ID": "app-1", "CLIENT_SECRET": clientSecretCanary}[k]
			return v, ok
		}})
	c := oauthContract(base, tokenURL)

	for i, want := range []string{"-1", "-1"} {
		resp := p.Status(context.Background(), c, base+"/v1/jobs/1")
		if resp.Transport != "" || resp.CredentialError != nil || resp.Status != 200 {
			t.Fatalf("call %d: %+v", i, resp)
		}
		if got := api.requests()[i].Header.Get("Authorization"); got != "Bearer "+tokenCanary+want {
			t.Errorf("call %d sent %q", i, got)
		}
		noCanary(t, c, resp, tokenCanary, clientSecretCanary)
	}
	if n := minted.Load(); n != 1 {
		t.Fatalf("minted %d tokens for two calls within the token's life, want 1", n)
	}
	clk.add(time.Hour)
	resp := p.Status(context.Background(), c, base+"/v1/jobs/1")
	if resp.Status != 200 || minted.Load() != 2 {
		t.Fatalf("after expiry: status %d, minted %d, want a second token", resp.Status, minted.Load())
	}
	if got := api.requests()[2].Header.Get("Authorization"); got != "Bearer "+tokenCanary+"-2" {
		t.Errorf("after expiry sent %q", got)
	}
	noCanary(t, c, resp, tokenCanary, clientSecretCanary)
}

func TestOAuth2TokenEndpointFailureIsTransport(t *testing.T) {
	var minted atomic.Int32
	tokenURL, _ := tokenEndpoint(t, &minted, 3600)
	api, base := serve(t, "api.test", echoProvider)
	wrong := clientSecretCanary + "-old"
	p := New(Options{Transport: testTransport(), Now: time.Now,
		Getenv: func(k string) (string, bool) {
			v, ok := map[string]string{"CLIENT_ID": "app-1", "CLIENT_SECRET": wrong}[k]
			return v, ok
		}})
	c := oauthContract(base, tokenURL)
	resp := p.Status(context.Background(), c, base+"/v1/jobs/1")
	if resp.Transport != pollwarden.TransportOther || !resp.Sent || resp.CredentialError != nil {
		t.Fatalf("want a transport failure, got %+v", resp)
	}
	if !strings.Contains(resp.TransportDetail, "HTTP 401 (invalid_client)") || !strings.Contains(resp.TransportDetail, "login.test") {
		t.Errorf("detail %q does not say what the token endpoint answered", resp.TransportDetail)
	}
	if len(api.requests()) != 0 {
		t.Errorf("the provider was called without a token")
	}
	noCanary(t, c, resp, wrong, clientSecretCanary)

	// An endpoint that cannot be reached says so, by class.
	c.Status.Credential.TokenURL = "http://login.test:1/token"
	resp = p.Status(context.Background(), c, base+"/v1/jobs/1")
	if resp.Transport != pollwarden.TransportRefused || !strings.Contains(resp.TransportDetail, "token endpoint") {
		t.Errorf("unreachable token endpoint: %+v", resp)
	}
}

// TestOAuth2TokenEndpointRedirectNotFollowed: the client secret goes to
// the contract's token endpoint only, never where it redirects.
func TestOAuth2TokenEndpointRedirectNotFollowed(t *testing.T) {
	evil, evilBase := serve(t, "evil.test", nil)
	_, tokBase := serve(t, "login.test", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evilBase+"/steal", http.StatusTemporaryRedirect)
	})
	_, base := serve(t, "api.test", echoProvider)
	p := New(Options{Transport: testTransport(), Now: time.Now,
		Getenv: func(k string) (string, bool) {
			return map[string]string{"CLIENT_ID": "app-1", "CLIENT_SECRET": clientSecretCanary}[k], true
		}})
	resp := p.Status(context.Background(), oauthContract(base, tokBase+"/token"), base+"/v1/jobs/1")
	if resp.Transport == "" || !strings.Contains(resp.TransportDetail, "HTTP 307") {
		t.Errorf("redirecting token endpoint: %+v", resp)
	}
	if len(evil.requests()) != 0 {
		t.Errorf("the token request followed a redirect")
	}
}

// googleKey writes a service account key file whose token_uri is tokenURL
// and returns its path and public key.
func googleKey(t *testing.T, tokenURL string) (string, *rsa.PublicKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "kid-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "poller@p.iam.gserviceaccount.com", "token_uri": tokenURL,
	})
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, &k.PublicKey
}

func TestGoogleServiceAccountToken(t *testing.T) {
	var minted atomic.Int32
	var pub *rsa.PublicKey
	var claims map[string]any
	_, tokBase := serve(t, "oauth2.test", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		// Check the assertion independently: RS256 over header.claims.
		parts := strings.Split(r.PostForm.Get("assertion"), ".")
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || len(parts) != 3 {
			http.Error(w, `{"error":"invalid_grant"}`, 400)
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
			http.Error(w, `{"error":"invalid_grant"}`, 400)
			return
		}
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		_ = json.Unmarshal(raw, &claims)
		n := minted.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"%s-g%d","token_type":"Bearer","expires_in":3599}`, tokenCanary, n)
	})
	tokenURL := tokBase + "/token"
	keyPath, pk := googleKey(t, tokenURL)
	pub = pk
	api, base := serve(t, "api.test", echoProvider)
	c := testContract(base)
	c.Status.Credential = &pollwarden.Credential{Kind: pollwarden.CredentialGoogle, Header: "Authorization", Scheme: "Bearer",
		Ref: "file:" + keyPath, TokenURL: tokenURL, Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}
	p := New(Options{Transport: testTransport(), Now: time.Now})
	for i := range 2 {
		resp := p.Status(context.Background(), c, base+"/v1/operations/x")
		if resp.Status != 200 {
			t.Fatalf("call %d: %+v", i, resp)
		}
		noCanary(t, c, resp, tokenCanary)
	}
	if minted.Load() != 1 {
		t.Errorf("minted %d, want 1", minted.Load())
	}
	if got := api.requests()[1].Header.Get("Authorization"); got != "Bearer "+tokenCanary+"-g1" {
		t.Errorf("sent %q", got)
	}
	if claims["iss"] != "poller@p.iam.gserviceaccount.com" || claims["scope"] != "https://www.googleapis.com/auth/cloud-platform" || claims["aud"] != tokenURL {
		t.Errorf("assertion claims %v", claims)
	}

	// A key file naming another token endpoint than the contract's is
	// refused before anything is sent.
	c.Status.Credential.TokenURL = "http://other.test:1/token"
	resp := p.Status(context.Background(), c, base+"/v1/operations/x")
	if resp.CredentialError == nil || !strings.Contains(resp.CredentialError.Error(), "names token endpoint") {
		t.Errorf("mismatched token_uri: %+v", resp)
	}
}
