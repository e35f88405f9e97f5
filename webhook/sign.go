package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (github.com/standard-webhooks/standard-webhooks,
// spec/standard-webhooks.md).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// ParseSecret decodes a Standard Webhooks symmetric secret: base64 after an
// optional "whsec_" prefix, 24 to 64 bytes as the spec asks. The error
// never contains the value.
func ParseSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	switch {
	case err != nil:
		return nil, errors.New("is not a Standard Webhooks secret (whsec_ followed by base64)")
	case len(key) < 24 || len(key) > 64:
		return nil, errors.New("must decode to 24 to 64 bytes (whsec_ followed by base64)")
	}
	return key, nil
}

// Sign returns the webhook-signature header value for one attempt:
// "v1," and the base64 HMAC-SHA256 of "{id}.{unix seconds}.{body}".
func Sign(key []byte, id string, at time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
