package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The test vector published with the Standard Webhooks reference libraries.
func TestSignSpecVector(t *testing.T) {
	key, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

// verify is an independent receiver-side check, written from the spec
// with crypto/hmac only: any of the space-separated v1 signatures matches.
func verify(secret, id, ts string, body []byte, header string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(header) {
		v, b64, ok := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

func TestSignVerifiedIndependently(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef01234567-webhook"))
	key, err := ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1764500000, 0)
	body := []byte(`{"type":"operation.escalated"}`)
	sig := Sign(key, "pw_1", at, body)
	if !verify(secret, "pw_1", "1764500000", body, sig) {
		t.Fatalf("independent verification failed for %s", sig)
	}
	for name, tamper := range map[string]func() bool{
		"body": func() bool {
			return verify(secret, "pw_1", "1764500000", []byte(`{"type":"operation.succeeded"}`), sig)
		},
		"id":        func() bool { return verify(secret, "pw_2", "1764500000", body, sig) },
		"timestamp": func() bool { return verify(secret, "pw_1", "1764500001", body, sig) },
	} {
		if tamper() {
			t.Errorf("a changed %s still verifies", name)
		}
	}
}

func TestParseSecretRefusesWithoutEcho(t *testing.T) {
	for _, s := range []string{"whsec_not base64!", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short")), "hunter2-plain-text"} {
		_, err := ParseSecret(s)
		if err == nil {
			t.Errorf("%q accepted", s)
			continue
		}
		if strings.Contains(err.Error(), strings.TrimPrefix(s, "whsec_")) {
			t.Errorf("the error echoes the secret: %v", err)
		}
	}
	if _, err := ParseSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); err != nil {
		t.Errorf("a secret without the whsec_ prefix: %v", err)
	}
}
