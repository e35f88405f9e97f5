package prober

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// maxDeniedBody bounds the part of a 401/403 body kept for the story.
const maxDeniedBody = 300

// DeniedBody is the answer's body as one text, the secret removed (every
// encoding the prober's redaction knows) and cut to a few hundred bytes:
// what a provider said when it refused the credential, for a person. ""
// when there was no body.
func (r Response) DeniedBody() string {
	if r.body == nil || len(r.body.raw) == 0 {
		return ""
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(r.body.raw), "\uFFFD"))
	return cut(r.body.scrub.text(s), maxDeniedBody)
}

// CredentialFingerprint is the keyed fingerprint of the secret behind ref
// (env:NAME or file:PATH) as it reads now: hex HMAC-SHA256 under key. With
// a key drawn at random and kept beside it, the fingerprint can tell a
// changed secret from the same one; it is never the secret nor a plain
// hash of it, which a list of likely secrets could be tried against
// without the key.
func CredentialFingerprint(ref string, key []byte, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) (string, error) {
	s, err := ResolveSecret(ref, getenv, readFile)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil)), nil
}

// Refused fingerprints the credential c's status request carries, read
// again just after the provider refused it (401, 403), under a new random
// key. For minted tokens (OAuth2 client credentials) it is the configured
// client secret's, since that is what a person changes. Nil when c has no
// credential or it cannot be read now.
func (p *Prober) Refused(c *pollwarden.ContractSpec, at time.Time) *pollwarden.RefusedCredential {
	cred := c.Status.Credential
	if cred == nil || cred.Ref == "" {
		return nil
	}
	key := make([]byte, sha256.Size)
	if _, err := rand.Read(key); err != nil {
		return nil
	}
	mac, err := CredentialFingerprint(cred.Ref, key, p.getenv, p.readFile)
	if err != nil {
		return nil
	}
	return &pollwarden.RefusedCredential{Ref: cred.Ref, Key: hex.EncodeToString(key), MAC: mac, At: at}
}

// CredentialChanged reports whether rc's reference now reads as a secret
// other than the refused one. A secret that cannot be read, or a record
// whose key is unusable, is not a change: retry_credential is then not
// offered.
func CredentialChanged(rc *pollwarden.RefusedCredential, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) bool {
	if rc == nil {
		return false
	}
	key, err := hex.DecodeString(rc.Key)
	if err != nil || len(key) == 0 {
		return false
	}
	mac, err := CredentialFingerprint(rc.Ref, key, getenv, readFile)
	if err != nil {
		return false
	}
	return !hmac.Equal([]byte(mac), []byte(rc.MAC))
}
