package contract

import (
	"encoding/json"
	"strings"
)

// topKeys is the set of names a contract's expressions may read at the
// top of a body, or nil when one of them might read any key (a wildcard
// or the current node @), and the whole body must be decoded.
//
// It is a lexical superset: every identifier outside a literal counts,
// so a name used deeper in a path, or a function's name, is kept too.
// Erring that way costs only speed; a missed key would change a result.
func topKeys(exprs ...string) map[string]bool {
	keys := map[string]bool{}
	for _, e := range exprs {
		if !identifiers(e, keys) {
			return nil
		}
	}
	return keys
}

// identifiers adds the identifiers of expr to keys, and reports false
// when expr holds * or @ outside a literal.
func identifiers(expr string, keys map[string]bool) bool {
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '\'' || c == '`':
			// A raw string or a JSON literal: skip to its unescaped end.
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' {
					i++
				}
			}
		case c == '"':
			var b strings.Builder
			for i++; i < len(expr) && expr[i] != '"'; i++ {
				if expr[i] == '\\' && i+1 < len(expr) {
					i++
				}
				b.WriteByte(expr[i])
			}
			keys[b.String()] = true
		case c == '*' || c == '@':
			return false
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i
			for j < len(expr) && (expr[j] == '_' || expr[j] >= 'A' && expr[j] <= 'Z' || expr[j] >= 'a' && expr[j] <= 'z' || expr[j] >= '0' && expr[j] <= '9') {
				j++
			}
			keys[expr[i:j]] = true
			i = j - 1
		}
	}
	return true
}

// decodePruned decodes a JSON body keeping, at its top level, only the
// keys in keep (nil keeps all): a transcript's word timings, which no path
// reads, are validated but never built. Anything but a valid object falls
// back to json.Unmarshal, so errors read as they always have.
func decodePruned(body []byte, keep map[string]bool) (any, error) {
	if keep != nil && json.Valid(body) {
		if doc, ok := prunedObject(body, keep); ok {
			return doc, nil
		}
	}
	var doc any
	err := json.Unmarshal(body, &doc)
	return doc, err
}

// prunedObject walks a body json.Valid accepted: for each top-level key
// it finds the value's extent and decodes only the kept ones. A later
// duplicate key wins, as in json.Unmarshal.
func prunedObject(body []byte, keep map[string]bool) (map[string]any, bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	doc := map[string]any{}
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] != '}' {
		end := skipString(body, i)
		var key string
		if json.Unmarshal(body[i:end], &key) != nil {
			return nil, false
		}
		i = skipSpace(body, end)
		i = skipSpace(body, i+1) // the colon
		end = skipValue(body, i)
		if keep[key] {
			var v any
			if json.Unmarshal(body[i:end], &v) != nil {
				return nil, false
			}
			doc[key] = v
		} else {
			delete(doc, key)
		}
		i = skipSpace(body, end)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return doc, i < len(body)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
