package prober

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDeniedBodyIsRedacted: the body of a 401 that echoes the credential,
// raw, JSON-escaped and percent-encoded, is kept for the story with every
// form of the secret removed, and cut.
func TestDeniedBodyIsRedacted(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.WriteHeader(http.StatusUnauthorized)
		b, _ := json.Marshal(map[string]string{"error": "invalid_token", "sent": auth, "escaped": jsonEscapeAll(canary)})
		_, _ = w.Write(append(b, []byte(" q="+url.QueryEscape(canary)+strings.Repeat(" pad", 200))...))
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary})
	resp := p.Status(context.Background(), testContract(base), base+"/j")
	body := resp.DeniedBody()
	for _, leak := range leakForms {
		if strings.Contains(body, leak) {
			t.Fatalf("the denied body keeps the secret: %s", body)
		}
	}
	if !strings.Contains(body, "invalid_token") || !strings.Contains(body, Redacted) || len(body) > maxDeniedBody+40 {
		t.Fatalf("denied body %q (%d bytes)", body, len(body))
	}
}

// TestRefusedCredentialFingerprint: the fingerprint of a refused
// credential is keyed (never the secret, never its plain hash), tells a
// changed secret from the same one, and is not a change when the secret
// cannot be read.
func TestRefusedCredentialFingerprint(t *testing.T) {
	env := map[string]string{"EXPORT_API_TOKEN": canary}
	p := New(Options{Now: time.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	rc := p.Refused(testContract("api.test"), time.Now())
	if rc == nil || rc.Ref != "env:EXPORT_API_TOKEN" || len(rc.Key) != 64 || len(rc.MAC) != 64 {
		t.Fatalf("refused credential %+v", rc)
	}
	if strings.Contains(rc.MAC+rc.Key, "sk-canary") || rc.MAC == plainHash(canary) {
		t.Fatal("the fingerprint is the secret or its plain hash")
	}
	if again := p.Refused(testContract("api.test"), time.Now()); again.MAC == rc.MAC {
		t.Fatal("two refusals share a key: the fingerprint should be keyed afresh")
	}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if CredentialChanged(rc, getenv, nil) {
		t.Fatal("the same secret reads as changed")
	}
	env["EXPORT_API_TOKEN"] = canary + "-rotated"
	if !CredentialChanged(rc, getenv, nil) {
		t.Fatal("a rotated secret reads as unchanged")
	}
	delete(env, "EXPORT_API_TOKEN")
	if CredentialChanged(rc, getenv, nil) {
		t.Fatal("a secret that cannot be read counts as changed")
	}
	bad := *rc
	bad.Key = "not hex"
	env["EXPORT_API_TOKEN"] = "other"
	if CredentialChanged(&bad, getenv, nil) {
		t.Fatal("a record with an unusable key counts as changed")
	}
}

func plainHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
