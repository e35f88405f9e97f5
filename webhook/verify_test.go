package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestVerifyStandardWebhooks(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	at := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"batch.completed"}`)
	sig := Sign(key, "msg_1", at, body)
	ts := strconv.FormatInt(at.Unix(), 10)
	for _, tc := range []struct {
		name, id, ts, sig string
		body              []byte
		now               time.Time
		want              string
	}{
		{"valid", "msg_1", ts, sig, body, at, ""},
		{"valid among others", "msg_1", ts, "v1,bm9wZQ== " + sig, body, at.Add(4 * time.Minute), ""},
		{"old", "msg_1", ts, sig, body, at.Add(6 * time.Minute), "replay"},
		{"future", "msg_1", ts, sig, body, at.Add(-6 * time.Minute), "replay"},
		{"other body", "msg_1", ts, sig, []byte(`{"type":"batch.failed"}`), at, "does not match"},
		{"other id", "msg_2", ts, sig, body, at, "does not match"},
		{"other key", "msg_1", ts, Sign([]byte("fedcba9876543210fedcba9876543210"), "msg_1", at, body), body, at, "does not match"},
		{"no signature", "msg_1", ts, "", body, at, "required"},
		{"bad timestamp", "msg_1", "yesterday", sig, body, at, "unix seconds"},
	} {
		err := Verify(key, tc.id, tc.ts, tc.sig, tc.body, tc.now)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestVerifyGitHub(t *testing.T) {
	secret := []byte("It's a Secret to Everybody")
	body := []byte("Hello, World!")
	// GitHub's documented example (docs.github.com, validating webhook deliveries).
	const doc = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if err := VerifyGitHub(secret, doc, body); err != nil {
		t.Fatalf("GitHub's example: %v", err)
	}
	m := hmac.New(sha256.New, []byte("another secret"))
	m.Write(body)
	for _, h := range []string{"", "sha1=abc", "sha256=" + hex.EncodeToString(m.Sum(nil)), doc[:len(doc)-1] + "0"} {
		if err := VerifyGitHub(secret, h, body); err == nil {
			t.Errorf("header %q verified", h)
		}
	}
}
