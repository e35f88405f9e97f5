package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// ContractDigest digests each section of c, keyed by the section's name in
// the contract file, so that an operation can keep what it was created
// under (Operation.ContractDigest) and a decision made with another file
// of the same name can be refused with what differs. Zero values are left
// out of each section's digest, so a later pollwarden that learns a new,
// unset contract field still recognises the contracts it digested before.
// It holds no secret: the credential appears by reference only, and a
// digest cannot be reversed.
func ContractDigest(c *pollwarden.ContractSpec) map[string]string {
	sections := map[string]any{
		"status":                 c.Status,
		"state":                  c.State,
		"result":                 c.Result,
		"hints":                  c.Hints,
		"not_found":              c.NotFoundPendingFor,
		"backoff":                c.Backoff,
		"limits":                 c.Limits,
		"escalation.extension":   extensionDigest(c.Escalation),
		"escalation.console_url": c.Escalation.ConsoleURL,
		"cancel":                 c.Cancel,
	}
	out := make(map[string]string, len(sections))
	for name, v := range sections {
		out[name] = digestOf(v)
	}
	return out
}

// CheckContract refuses c for a decision on op when it differs from the
// contract op was created under, naming the sections that changed. A
// record created before digests were kept is not checked.
func CheckContract(op *pollwarden.Operation, c *pollwarden.ContractSpec) error {
	if op.Contract != c.Name {
		return pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s belongs to contract %q, not %q", op.ID, op.Contract, c.Name)
	}
	if op.ContractDigest == nil {
		return nil
	}
	now := ContractDigest(c)
	var changed []string
	for name, d := range now {
		if op.ContractDigest[name] != d {
			changed = append(changed, name+" changed")
		}
	}
	for name := range op.ContractDigest {
		if _, ok := now[name]; !ok {
			changed = append(changed, name+" is unknown to this pollwarden")
		}
	}
	if len(changed) == 0 {
		return nil
	}
	sort.Strings(changed)
	return pollwarden.Refuse(pollwarden.ErrInvalid, "", "contract %s differs from the one operation %s was created under: %s; a decision uses the contract the operation was created under",
		c.Name, op.ID, strings.Join(changed, ", "))
}

// digestOf hashes v's JSON with zero values removed (see ContractDigest).
func digestOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Contracts are plain data; a value that does not encode is a
		// programming error, and a digest that never matches is safe.
		return "unencodable"
	}
	// Numbers stay exact (durations in nanoseconds exceed a float's
	// integers).
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return "unencodable"
	}
	b, _ = json.Marshal(pruneZero(tree))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// pruneZero drops null, false, 0, "" and empty containers from a decoded
// JSON tree; encoding/json then writes object keys sorted.
func pruneZero(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = pruneZero(e)
			if isZero(e) {
				delete(x, k)
				continue
			}
			x[k] = e
		}
		return x
	case []any:
		out := slices.Clone(x)
		for i, e := range out {
			out[i] = pruneZero(e)
		}
		return out
	}
	return v
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case json.Number:
		return x == "0"
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// extensionDigest is the extension's section: its bounds join it only
// when set, so a contract without them digests as it did before they
// existed.
func extensionDigest(e pollwarden.EscalationSpec) []any {
	out := []any{e.ExtensionTime, e.ExtensionRequests}
	if e.ExtensionMaxTime > 0 || e.ExtensionMaxRequests > 0 {
		out = append(out, e.ExtensionMaxTime, e.ExtensionMaxRequests)
	}
	return out
}
