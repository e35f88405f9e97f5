package prober

import (
	"encoding/json"
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// Caps on what one answer can put into the record, its events and the
// webhooks built from them. They apply after redaction, never before, so a
// cut can never keep part of a secret. See docs/decisions.md.
const (
	// MaxStateBytes bounds a state value the contract does not list (a
	// listed value is the contract's own, and kept whole).
	MaxStateBytes = 256
	// MaxErrorBytes bounds the JSON kept from result.error_path.
	MaxErrorBytes = 4 << 10
	// MaxFieldBytes bounds the JSON of each required result field.
	MaxFieldBytes = 16 << 10
	// MaxHintBytes bounds a string at a hint path (a number or an RFC 3339
	// time is a few dozen bytes).
	MaxHintBytes = 256
	// MaxProblemBytes bounds the text saying why a body was not usable.
	MaxProblemBytes = 1 << 10
	// maxDetail bounds TransportDetail: it goes to the store and the
	// audit line.
	maxDetail = 200
	// maxRequestIDLen bounds what a provider can push into the store as a
	// request id.
	maxRequestIDLen = 256
	// maxRetryAfter bounds the raw Retry-After kept (an HTTP date is 29
	// bytes).
	maxRetryAfter = 128
	// maxLocation bounds the raw Location kept.
	maxLocation = 2 << 10
)

// cut keeps at most n bytes of s, on a rune boundary, and marks what it
// removed: "…[cut: 912345 bytes]" counts the bytes left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	kept := validUTF8Prefix(s, n)
	return kept + cutMark(len(s)-len(kept))
}

func cutMark(n int) string { return fmt.Sprintf("…[cut: %d bytes]", n) }

// bound applies the caps to the facts of one body, after redaction.
// Listed states are kept whole: they are bounded by the contract.
func bound(f *pollwarden.BodyFacts, c *pollwarden.ContractSpec, listed map[string]bool) {
	f.Problem = cut(f.Problem, MaxProblemBytes)
	if !listed[f.State] {
		f.State = cut(f.State, MaxStateBytes)
	}
	if len(f.Error) > MaxErrorBytes {
		// Kept as a JSON string of the cut JSON text, so the record stays
		// valid JSON and says it was cut.
		f.Error, _ = json.Marshal(cut(string(f.Error), MaxErrorBytes))
	}
	urls := map[string]bool{}
	for _, r := range c.Result.Require {
		if r.Kind == pollwarden.KindURL {
			urls[r.Key()] = true
		}
	}
	for path, v := range f.Fields {
		f.Fields[path] = boundField(v, urls[path])
	}
	f.PollAfter = boundHint(f.PollAfter)
	f.NextCheckAt = boundHint(f.NextCheckAt)
	f.JobExpiresAt = boundHint(f.JobExpiresAt)
}

// boundField caps one result field. A cut URL would still parse as a URL,
// and a broken link must not pass for a result: a URL field over the cap
// keeps only the mark, which fails the contract's url check.
func boundField(v any, isURL bool) any {
	if s, ok := v.(string); ok {
		switch {
		case len(s) <= MaxFieldBytes:
			return s
		case isURL:
			return fmt.Sprintf("[cut: %d bytes]", len(s))
		}
		return cut(s, MaxFieldBytes)
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) <= MaxFieldBytes {
		return v
	}
	return cut(string(b), MaxFieldBytes)
}

func boundHint(v any) any {
	if s, ok := v.(string); ok {
		return cut(s, MaxHintBytes)
	}
	return v
}
