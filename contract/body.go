package contract

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
)

// bodyVar finds the {name} references in a body or header template's
// strings; a name may be a result field's dotted path (result.taskId).
var bodyVar = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}`)

// body decodes status.body: any YAML value, kept as JSON text. Its
// strings may hold {job_id} and the declared variables; each is filled in
// as text inside a JSON string when the request is built, so a value can
// never add a key or end the string.
func (d *decoder) body(path string, n *yaml.Node) string {
	v, err := yamlValue(n, 0)
	if err != nil {
		d.addf(n.Line, path, "%v", err)
		return ""
	}
	bad := ""
	walkStrings(v, func(s string) string {
		for _, m := range bodyVar.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(d.known, m[1]) && bad == "" {
				bad = m[1]
			}
		}
		return s
	})
	if bad != "" {
		d.addf(n.Line, path, "unknown variable {%s}: declare it under vars", bad)
	}
	out, err := json.Marshal(v)
	if err != nil {
		d.addf(n.Line, path, "cannot be written as JSON: %v", err)
		return ""
	}
	return string(out)
}

// yamlValue turns a YAML node into plain JSON-able values (maps with string
// keys, lists, strings, numbers, booleans, null).
func yamlValue(n *yaml.Node, depth int) (any, error) {
	n = resolve(n)
	if n == nil || depth > 32 {
		return nil, fmt.Errorf("nested too deeply")
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("keys must be strings")
			}
			v, err := yamlValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		switch v.(type) {
		case nil, bool, int, int64, uint64, float64, string:
			return v, nil
		}
		return n.Value, nil // timestamps and the like: as written
	}
	return nil, fmt.Errorf("must be a JSON value")
}

// walkStrings replaces every string in v (not the keys) with f's result.
func walkStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, f)
		}
	case []any:
		for i, e := range x {
			x[i] = walkStrings(e, f)
		}
	}
	return v
}

// StatusBody builds the status request's body for one operation, nil
// when the contract sends none. Every {name} the template holds must have
// a value.
func StatusBody(c *pollwarden.ContractSpec, jobID string, vars map[string]string) ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	return fillBody(c.Status.Body, withJob(jobID, vars), "status body", false)
}

// CancelBody builds the cancel request's body (a JSON-RPC tasks/cancel),
// nil when the contract's cancel sends none.
func CancelBody(c *pollwarden.ContractSpec, jobID string, vars map[string]string) ([]byte, error) {
	if c == nil || c.Cancel == nil {
		return nil, nil
	}
	return fillBody(c.Cancel.Body, withJob(jobID, vars), "cancel body", false)
}

// fillBody fills a body template's {name} references with values from
// all, each as text inside a JSON string, so a value can never add a key
// or end the string. In a paged fetch's body, a string that is exactly
// "{next_token}" while the token is empty (the first page) is dropped
// with its key: a provider such as Textract refuses an empty token.
func fillBody(tmpl string, all map[string]string, what string, paged bool) ([]byte, error) {
	if tmpl == "" {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal([]byte(tmpl), &v); err != nil {
		return nil, refusef("the contract's %s template is not JSON: %v", what, err)
	}
	if paged && all[nextTokenVar] == "" {
		v = dropEmptyToken(v)
	}
	missing := ""
	v = walkStrings(v, func(s string) string {
		return bodyVar.ReplaceAllStringFunc(s, func(m string) string {
			name := m[1 : len(m)-1]
			val, ok := all[name]
			if !ok && missing == "" {
				missing = name
			}
			return val
		})
	})
	if missing != "" {
		return nil, refusef("the %s needs {%s} and none is given", what, missing)
	}
	return json.Marshal(v)
}

// dropEmptyToken removes every map entry whose value is exactly
// "{next_token}".
func dropEmptyToken(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == "{"+nextTokenVar+"}" {
				delete(x, k)
				continue
			}
			x[k] = dropEmptyToken(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropEmptyToken(e)
		}
	}
	return v
}
