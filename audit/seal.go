package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pollwarden/pollwarden"
	"golang.org/x/crypto/chacha20poly1305"
)

// Sealer encrypts event payloads at rest. A store given a Sealer seals each
// payload before appending it and opens it when listing events. ad is
// authenticated but not encrypted: it binds a sealed payload to its event
// (see SealPayload), so it cannot be moved to another one.
type Sealer interface {
	// KeyID names the key without revealing it; a sealed payload carries
	// it, so a wrong key is reported as such rather than as tampering.
	KeyID() string
	Seal(plain, ad []byte) ([]byte, error)
	Open(sealed, ad []byte) ([]byte, error)
}

// Sealing errors, for errors.Is.
var (
	// ErrNoKey: a payload is sealed and no key was given.
	ErrNoKey = errors.New("event payloads are sealed; give the audit key (--audit-key FILE or POLLWARDEN_AUDIT_KEY_FILE)")
	// ErrWrongKey: a payload is sealed with another key than the one given.
	ErrWrongKey = errors.New("event payloads are sealed with another audit key")
	// ErrUnsealable: the right key does not open the payload: it was
	// altered after sealing.
	ErrUnsealable = errors.New("sealed payload does not open with its key: it was altered")
)

// sealMagic starts every sealed payload; plain payloads are JSON objects
// and start with '{'. After it come the 8-byte key id, the 24-byte nonce
// and the XChaCha20-Poly1305 ciphertext with its 16-byte tag.
const sealMagic = "PWS1"

const (
	keyIDLen   = 8
	sealHeader = len(sealMagic) + keyIDLen + chacha20poly1305.NonceSizeX
)

// SealKeySize is the length of a raw sealing key.
const SealKeySize = chacha20poly1305.KeySize

// sealKeyPEM is the PEM block type of a sealing key file.
const sealKeyPEM = "POLLWARDEN AUDIT SEAL KEY"

// SealKey seals with XChaCha20-Poly1305: a random 24-byte nonce per
// payload, so a key never needs rotating for nonce reasons.
type SealKey struct {
	aead interface {
		Seal(dst, nonce, plaintext, additionalData []byte) []byte
		Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
	}
	id [keyIDLen]byte
}

// NewSealKey returns a SealKey for a raw 32-byte key.
func NewSealKey(raw []byte) (*SealKey, error) {
	aead, err := chacha20poly1305.NewX(raw)
	if err != nil {
		return nil, fmt.Errorf("audit: seal key: %w", err)
	}
	k := &SealKey{aead: aead}
	sum := sha256.Sum256(append([]byte("pollwarden-audit-seal-key-id\x00"), raw...))
	copy(k.id[:], sum[:])
	return k, nil
}

// GenerateSealKeyPEM returns a new random sealing key as a PEM file body.
func GenerateSealKeyPEM() []byte {
	raw := make([]byte, SealKeySize)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	return pem.EncodeToMemory(&pem.Block{Type: sealKeyPEM, Bytes: raw})
}

// ParseSealKey reads a sealing key file body (PEM, as GenerateSealKeyPEM
// writes it).
func ParseSealKey(data []byte) (*SealKey, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != sealKeyPEM {
		return nil, fmt.Errorf("audit: not a sealing key: want a PEM block %q (pollwarden audit keygen --kind seal)", sealKeyPEM)
	}
	if len(b.Bytes) != SealKeySize {
		return nil, fmt.Errorf("audit: sealing key has %d bytes, want %d", len(b.Bytes), SealKeySize)
	}
	return NewSealKey(b.Bytes)
}

// LoadSealKey reads a sealing key file.
func LoadSealKey(path string) (*SealKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read sealing key: %w", err)
	}
	k, err := ParseSealKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// KeyID is 16 hex digits derived from the key by SHA-256.
func (k *SealKey) KeyID() string { return hex.EncodeToString(k.id[:]) }

// Seal returns magic, key id, nonce and ciphertext.
func (k *SealKey) Seal(plain, ad []byte) ([]byte, error) {
	out := make([]byte, sealHeader, sealHeader+len(plain)+chacha20poly1305.Overhead)
	copy(out, sealMagic)
	copy(out[len(sealMagic):], k.id[:])
	nonce := out[len(sealMagic)+keyIDLen : sealHeader]
	_, _ = rand.Read(nonce)
	return k.aead.Seal(out, nonce, plain, ad), nil
}

// Open reverses Seal; a payload sealed with another key fails with
// ErrWrongKey, an altered one with ErrUnsealable.
func (k *SealKey) Open(sealed, ad []byte) ([]byte, error) {
	id, ok := SealedKeyID(sealed)
	if !ok {
		return nil, errors.New("audit: payload is not sealed")
	}
	if id != k.KeyID() {
		return nil, fmt.Errorf("%w: sealed with key %s, the given key is %s", ErrWrongKey, id, k.KeyID())
	}
	plain, err := k.aead.Open(nil, sealed[len(sealMagic)+keyIDLen:sealHeader], sealed[sealHeader:], ad)
	if err != nil {
		return nil, ErrUnsealable
	}
	return plain, nil
}

// SealedKeyID returns the key id a sealed payload names; ok is false for a
// payload that is not sealed.
func SealedKeyID(payload []byte) (id string, ok bool) {
	if len(payload) < sealHeader+chacha20poly1305.Overhead || !bytes.HasPrefix(payload, []byte(sealMagic)) {
		return "", false
	}
	return hex.EncodeToString(payload[len(sealMagic) : len(sealMagic)+keyIDLen]), true
}

// IsSealed reports whether a stored payload is sealed.
func IsSealed(payload []byte) bool {
	_, ok := SealedKeyID(payload)
	return ok
}

// sealAD binds a sealed payload to its operation, kind and time, which are
// stored beside it in the clear.
func sealAD(e pollwarden.Event) []byte {
	var b []byte
	b = netstring(b, []byte("pollwarden-audit-seal-v1"))
	b = netstring(b, []byte(e.OperationID))
	b = netstring(b, []byte(e.Kind))
	return netstring(b, e.At.UTC().AppendFormat(nil, time.RFC3339Nano))
}

// SealPayload returns the payload to store for e: the canonical JSON of
// e.Data (Payload), sealed when s is not nil.
func SealPayload(s Sealer, e pollwarden.Event) ([]byte, error) {
	plain, err := Payload(e.Data)
	if err != nil || s == nil {
		return plain, err
	}
	out, err := s.Seal(plain, sealAD(e))
	if err != nil {
		return nil, fmt.Errorf("audit: seal payload: %w", err)
	}
	return out, nil
}

// OpenPayload decodes e.Payload, opening it with s when it is sealed. A
// sealed payload fails with ErrNoKey when s is nil, ErrWrongKey when s is
// another key and ErrUnsealable when it was altered; errors name the event.
func OpenPayload(s Sealer, e pollwarden.Event) (pollwarden.EventData, error) {
	var d pollwarden.EventData
	if Pruned(e) {
		return d, nil
	}
	plain := e.Payload
	if id, sealed := SealedKeyID(e.Payload); sealed {
		if s == nil {
			return d, fmt.Errorf("audit: event pos %d (operation %s seq %d): %w (key %s)", e.Pos, e.OperationID, e.Seq, ErrNoKey, id)
		}
		var err error
		if plain, err = s.Open(e.Payload, sealAD(e)); err != nil {
			return d, fmt.Errorf("audit: event pos %d (operation %s seq %d): %w", e.Pos, e.OperationID, e.Seq, err)
		}
	}
	if err := json.Unmarshal(plain, &d); err != nil {
		return d, fmt.Errorf("audit: event pos %d (operation %s seq %d): payload: %w", e.Pos, e.OperationID, e.Seq, err)
	}
	return d, nil
}
