// Package audit makes the audit trail tamper-evident (R25): each event
// carries the hash of the one before it, so an edited, deleted, inserted or
// reordered event breaks the chain and VerifyChain names where.
//
// The package is pure (standard library only) so that `pollwarden audit
// verify` can check an exported trail offline, without a store.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Version tags the canonical encoding so that a future change of encoding
// can never be confused with tampering.
const Version = "pollwarden-audit-v1"

// Encode returns the canonical bytes that Hash digests. They are the compact
// JSON array (no insignificant whitespace, no HTML escaping)
//
//	["pollwarden-audit-v1", prev_hash, operation_id, seq, at, kind, data]
//
// where prev_hash, operation_id and kind are JSON strings, seq is a JSON
// integer, at is e.At in UTC formatted with time.RFC3339Nano (trailing zero
// digits dropped, "Z" suffix), and data is the JSON of e.Data re-encoded
// with object keys sorted and numbers kept verbatim. Sorting the keys makes
// the hash independent of Go field order and of a database that reorders
// JSON keys (PostgreSQL jsonb), and lets any language recompute it.
//
// OperationID and Seq are inside the hash so that an event cannot be moved
// to another operation or position and keep its hash. PrevHash and Hash
// themselves are not part of Data. Encode fails only when e.Data cannot be
// encoded as JSON (an invalid json.RawMessage).
func Encode(prevHash string, e pollwarden.Event) ([]byte, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("audit: encode event data: %w", err)
	}
	data, err = canonicalJSON(data)
	if err != nil {
		return nil, fmt.Errorf("audit: encode event data: %w", err)
	}
	at := e.At.UTC().Format(time.RFC3339Nano)
	var b bytes.Buffer
	b.WriteString(`["` + Version + `",`)
	for _, s := range []string{prevHash, e.OperationID} {
		writeString(&b, s)
		b.WriteByte(',')
	}
	fmt.Fprintf(&b, "%d,", e.Seq)
	writeString(&b, at)
	b.WriteByte(',')
	writeString(&b, string(e.Kind))
	b.WriteByte(',')
	b.Write(data)
	b.WriteByte(']')
	return b.Bytes(), nil
}

// Hash returns the lower-case hex SHA-256 of Encode(prevHash, e). It returns
// "" when the event cannot be encoded; stores reject such data before they
// hash it, so "" never matches a stored hash.
func Hash(prevHash string, e pollwarden.Event) string {
	b, err := Encode(prevHash, e)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON re-encodes a JSON value with sorted object keys and without
// HTML escaping; json.Number keeps every number exactly as written.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	b.Truncate(b.Len() - 1)
}
