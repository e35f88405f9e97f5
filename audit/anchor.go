package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// AnchorVersion tags the signed bytes of an Anchor.
const AnchorVersion = "pollwarden-anchor-v1"

// Anchor is a signed checkpoint of a store's chain: "at At, the event at
// Pos had hash Head". Kept outside the store (a ticket, another machine, a
// WORM bucket), it lets `pollwarden audit verify --anchor` detect a tail
// cut off or a store file rolled back to an older copy, which the chain
// alone cannot show. The signature is ed25519 over AnchorMessage.
type Anchor struct {
	Version   string    `json:"version"`
	Pos       int64     `json:"pos"`
	Head      string    `json:"head"`
	At        time.Time `json:"at"`
	PublicKey string    `json:"public_key"` // base64 (standard) of the 32-byte ed25519 key
	Signature string    `json:"signature"`  // base64 (standard) of the 64-byte signature
}

// AnchorMessage is what an anchor's signature covers: four netstrings,
// AnchorVersion, pos (decimal), head, at (UTC, time.RFC3339Nano).
func AnchorMessage(pos int64, head string, at time.Time) []byte {
	var b []byte
	b = netstring(b, []byte(AnchorVersion))
	b = netstring(b, strconv.AppendInt(nil, pos, 10))
	b = netstring(b, []byte(head))
	return netstring(b, at.UTC().AppendFormat(nil, time.RFC3339Nano))
}

// SignAnchor signs the head (pos, hash) observed at time at.
func SignAnchor(key ed25519.PrivateKey, pos int64, head string, at time.Time) Anchor {
	at = at.UTC()
	sig := ed25519.Sign(key, AnchorMessage(pos, head, at))
	return Anchor{Version: AnchorVersion, Pos: pos, Head: head, At: at,
		PublicKey: base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(sig)}
}

// Check verifies the anchor's signature. With trusted nil it checks against
// the public key the anchor carries, which proves the anchor intact but not
// who made it; pass the key you expect to exclude a forged anchor.
func (a Anchor) Check(trusted ed25519.PublicKey) error {
	if a.Version != AnchorVersion {
		return fmt.Errorf("audit: anchor version %q, want %q", a.Version, AnchorVersion)
	}
	if a.Pos < 1 || a.Head == "" {
		return fmt.Errorf("audit: anchor has no head (pos %d, head %q)", a.Pos, a.Head)
	}
	pub, err := base64.StdEncoding.DecodeString(a.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("audit: anchor public_key is not a base64 ed25519 key")
	}
	if trusted != nil && !trusted.Equal(ed25519.PublicKey(pub)) {
		return fmt.Errorf("audit: anchor is signed by key %s, not by the trusted key %s", KeyFingerprint(pub), KeyFingerprint(trusted))
	}
	sig, err := base64.StdEncoding.DecodeString(a.Signature)
	if err != nil || !ed25519.Verify(pub, AnchorMessage(a.Pos, a.Head, a.At), sig) {
		return errors.New("audit: anchor signature is invalid: the anchor was altered")
	}
	return nil
}

// Checkpoint returns the anchor as a Verifier checkpoint.
func (a Anchor) Checkpoint() Checkpoint {
	return Checkpoint{Pos: a.Pos, Hash: a.Head, What: "the anchor of " + a.At.UTC().Format(time.RFC3339)}
}

// LoadAnchor reads an anchor file (JSON, as `pollwarden audit anchor`
// writes it). It does not check the signature; call Check.
func LoadAnchor(path string) (Anchor, error) {
	var a Anchor
	data, err := os.ReadFile(path)
	if err != nil {
		return a, fmt.Errorf("audit: read anchor: %w", err)
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("audit: anchor %s: %w", path, err)
	}
	return a, nil
}

// KeyFingerprint names a public key: the first 16 hex digits of its
// SHA-256.
func KeyFingerprint(pub []byte) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// GenerateAnchorKey returns a new ed25519 key as a PKCS#8 PEM file body
// ("PRIVATE KEY", as openssl writes it) and its public key.
func GenerateAnchorKey() (pemBody []byte, pub ed25519.PublicKey) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader) // crypto/rand never fails
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		panic(err) // ed25519 keys always marshal
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pub
}

// LoadAnchorKey reads an ed25519 private key (PKCS#8 PEM).
func LoadAnchorKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read anchor key: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("audit: %s: not a PEM \"PRIVATE KEY\" (pollwarden audit keygen --kind anchor)", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("audit: %s: a %T, want an ed25519 key", path, k)
	}
	return priv, nil
}

// LoadPublicKey reads a public key file: the base64 ed25519 key that
// `pollwarden audit keygen --kind anchor` writes beside the private key.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read public key: %w", err)
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("audit: %s: not a base64 ed25519 public key", path)
	}
	return pub, nil
}
