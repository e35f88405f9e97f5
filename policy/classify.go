package policy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

type stateClass int

const (
	classUnknown stateClass = iota
	classPending
	classSuccess
	classFailure
	classCancelled
	classExpired
)

// classOf applies the contract's state table (R2). A value in no list is
// unknown and stops, unless the contract says the provider documents
// unlisted values as still running.
func classOf(c *pollwarden.ContractSpec, s string) stateClass {
	t := &c.State
	switch {
	case slices.Contains(t.Success, s):
		return classSuccess
	case slices.Contains(t.Pending, s):
		return classPending
	case slices.Contains(t.Failure, s):
		return classFailure
	case slices.Contains(t.Cancelled, s):
		return classCancelled
	case slices.Contains(t.Expired, s):
		return classExpired
	case t.UnlistedPending:
		return classPending
	}
	return classUnknown
}

// validateResult checks every required field (R3) and returns them as one
// JSON object keyed by path, or the first problem found.
func validateResult(req []pollwarden.Field, fields map[string]any) (json.RawMessage, string) {
	out := make(map[string]any, len(req))
	for _, f := range req {
		v, ok := fields[f.Key()]
		if !ok || v == nil {
			return nil, fmt.Sprintf("required field %s is missing", f.Key())
		}
		if msg := checkKind(f.Kind, v); msg != "" {
			return nil, fmt.Sprintf("required field %s %s", f.Key(), msg)
		}
		out[f.Key()] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, "result fields cannot be encoded: " + err.Error()
	}
	return b, ""
}

func checkKind(k pollwarden.ResultKind, v any) string {
	switch k {
	case pollwarden.KindURL:
		s, ok := v.(string)
		if !ok {
			return "is " + typeName(v) + ", not a URL"
		}
		u, err := url.Parse(s)
		if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Sprintf("is not an absolute http(s) URL: %s", display.Clip(s))
		}
	case pollwarden.KindString:
		if s, ok := v.(string); !ok || s == "" {
			return "is not a non-empty string"
		}
	case pollwarden.KindNumber:
		if _, ok := v.(float64); !ok {
			return "is " + typeName(v) + ", not a number"
		}
	case pollwarden.KindBool:
		if _, ok := v.(bool); !ok {
			return "is " + typeName(v) + ", not a boolean"
		}
	}
	return ""
}
