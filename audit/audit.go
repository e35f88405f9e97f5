// Package audit makes the audit trail tamper-evident (R25) and readable
// (R26).
//
// A store keeps one hash chain across all its operations: every event has a
// global position Pos (1, 2, 3…) and carries the hash of the event at
// Pos-1, so an edited, deleted, inserted or reordered event breaks the chain
// and a Verifier names where. A truncated tail is found by comparing with a
// head recorded elsewhere (--head) or with a signed Anchor. Payloads may be
// sealed (encrypted) with a SealKey; the chain covers the stored bytes, so
// it is verified without the key. docs/audit.md explains the design.
//
// Everything here works on events alone, without a store, so that a trail
// can be checked offline.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Version tags the canonical encoding so that a future change of encoding
// can never be confused with tampering. It is the encoding of events that
// carry no PayloadDigest: those appended before stores recorded one.
const Version = "pollwarden-audit-v2"

// VersionDigest tags the encoding of events that carry a PayloadDigest:
// their hash covers the payload's digest instead of its bytes, so a prune
// can drop the payload and the hash still binds its kind, time, place and
// the digest of what was dropped.
const VersionDigest = "pollwarden-audit-v3"

// PayloadDigest returns the lower-case hex SHA-256 of a stored payload:
// the value an event keeps in PayloadDigest.
func PayloadDigest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// Encode returns the canonical bytes that Hash digests: eight netstrings
// (decimal byte length, ':', the bytes, ','), in this order:
//
//	"pollwarden-audit-v3", prev_hash, pos, operation_id, seq, at, kind, payload_digest
//
// for an event with a PayloadDigest, and for an older one without
//
//	"pollwarden-audit-v2", prev_hash, pos, operation_id, seq, at, kind, payload
//
// pos and seq are decimal integers, at is e.At in UTC formatted with
// time.RFC3339Nano (trailing zero digits dropped, "Z" suffix), payload is
// e.Payload exactly as stored: the canonical JSON of the event's data (see
// Payload) or those bytes sealed, and payload_digest is e.PayloadDigest,
// the hex SHA-256 of those bytes. Netstrings need no escaping, so any
// language can recompute a hash from a row or an export.
//
// Pos, OperationID and Seq are inside the hash so that an event cannot be
// moved to another place or operation and keep its hash; PrevHash links it
// to its predecessor. Hash itself and Data (decoded from Payload) are not
// encoded. That the digest matches the payload is checked apart (Verifier).
func Encode(e pollwarden.Event) []byte {
	var b []byte
	b = make([]byte, 0, 160+len(e.OperationID)+len(e.Payload))
	var num [20]byte
	version, content := Version, e.Payload
	if e.PayloadDigest != "" {
		version, content = VersionDigest, []byte(e.PayloadDigest)
	}
	b = netstring(b, []byte(version))
	b = netstring(b, []byte(e.PrevHash))
	b = netstring(b, strconv.AppendInt(num[:0], e.Pos, 10))
	b = netstring(b, []byte(e.OperationID))
	b = netstring(b, strconv.AppendInt(num[:0], e.Seq, 10))
	var at [40]byte
	b = netstring(b, e.At.UTC().AppendFormat(at[:0], time.RFC3339Nano))
	b = netstring(b, []byte(e.Kind))
	b = netstring(b, content)
	return b
}

func netstring(b, s []byte) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}

// Hash returns the lower-case hex SHA-256 of Encode(e): the value a store
// keeps in e.Hash and the next event keeps in its PrevHash.
func Hash(e pollwarden.Event) string {
	sum := sha256.Sum256(Encode(e))
	return hex.EncodeToString(sum[:])
}

// Payload returns the canonical JSON of d: compact, object keys sorted,
// no HTML escaping, numbers exactly as written. Sorted keys make the bytes
// independent of Go field order and let any language re-derive them. It
// fails only when d holds invalid raw JSON (ProviderError).
func Payload(d pollwarden.EventData) ([]byte, error) {
	if len(d.Options) == 0 && len(d.ProviderError) == 0 {
		if out, ok := sortedPayload(d); ok {
			return out, nil
		}
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("audit: encode event data: %w", err)
	}
	out, err := canonicalJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("audit: encode event data: %w", err)
	}
	return out, nil
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
