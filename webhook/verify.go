package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// ReplayWindow is how far a Standard Webhooks timestamp may be from now
// (either way) for the signature to be accepted: the spec's suggestion,
// so a captured request cannot be replayed later.
const ReplayWindow = 5 * time.Minute

// Verify checks a Standard Webhooks delivery the way Sign makes one: the
// webhook-signature header holds space-separated "v1,<base64>" entries,
// one of which must be the HMAC of "{id}.{timestamp}.{body}" with key; the
// timestamp must be within ReplayWindow of now. The error says what is
// wrong, never the expected signature.
func Verify(key []byte, id, timestamp, signature string, body []byte, now time.Time) error {
	if id == "" || timestamp == "" || signature == "" {
		return errors.New("webhook-id, webhook-timestamp and webhook-signature are required")
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not unix seconds")
	}
	at := time.Unix(secs, 0)
	if d := now.Sub(at); d > ReplayWindow || d < -ReplayWindow {
		return errors.New("webhook-timestamp is more than 5 minutes from now: refused as a replay")
	}
	want := Sign(key, id, at, body)
	for _, s := range strings.Fields(signature) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook-signature does not match")
}

// VerifyGitHub checks GitHub's X-Hub-Signature-256 header: "sha256=" and
// the hex HMAC-SHA256 of the body with the webhook's secret. GitHub sends
// no timestamp, so a replay cannot be told apart; a replayed callback can
// only wake an operation that is already due, which costs one request at
// most per base delay.
func VerifyGitHub(secret []byte, header string, body []byte) error {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return errors.New("X-Hub-Signature-256 is missing or not sha256=<hex>")
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(strings.ToLower(got)), []byte(want)) {
		return errors.New("X-Hub-Signature-256 does not match")
	}
	return nil
}
