package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// specTable is the SPEC's API table, written out again here on purpose:
// the route table and the OpenAPI document are both checked against it.
var specTable = []struct{ method, path, role string }{
	{"POST", "/v1/operations", "agent"},
	{"GET", "/v1/operations/{id}", "agent"},
	{"GET", "/v1/operations", "agent"},
	{"GET", "/v1/operations/{id}/audit", "agent"},
	{"GET", "/v1/operations/{id}/result", "agent"},
	{"POST", "/v1/operations/{id}/extension-requests", "agent"},
	{"POST", "/v1/operations/{id}/decisions", "approver"},
	{"POST", "/v1/operations/{id}/cancel", "approver"},
	{"GET", "/v1/incidents", "approver"},
	{"GET", "/v1/incidents/{id}", "approver"},
	{"POST", "/v1/incidents/{id}/decisions", "approver"},
	{"GET", "/metrics", "anyone"},
	{"GET", "/healthz", "anyone"},
	{"GET", "/readyz", "anyone"},
	{"GET", "/v1/quotas", "approver"},
}

type openAPIOp struct {
	Security    []map[string][]string `json:"security"`
	Role        string                `json:"x-pollwarden-role"`
	Responses   map[string]any        `json:"responses"`
	RequestBody map[string]any        `json:"requestBody"`
	Parameters  []map[string]any      `json:"parameters"`
}

func loadOpenAPI(t *testing.T, body []byte) (version string, paths map[string]map[string]openAPIOp) {
	t.Helper()
	var doc struct {
		OpenAPI string                          `json:"openapi"`
		Paths   map[string]map[string]openAPIOp `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	return doc.OpenAPI, doc.Paths
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	r := newRig(t)
	a := r.do("GET", "/v1/openapi.json", "", nil)
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", a.status, a.header.Get("Content-Type"))
	}
	version, paths := loadOpenAPI(t, a.body)
	if !strings.HasPrefix(version, "3.1") {
		t.Errorf("openapi %q, want 3.1", version)
	}
	roleOf := map[access]string{anyone: "anyone", agents: "agent", approvers: "approver", admins: "admin"}
	table := map[string]string{}
	for _, rt := range routes() {
		table[rt.method+" "+rt.path] = roleOf[need(rt)]
	}
	for _, s := range specTable {
		key := s.method + " " + s.path
		if table[key] != s.role {
			t.Errorf("route table: %s is %q, SPEC says %s", key, table[key], s.role)
		}
		op, ok := paths[s.path][strings.ToLower(s.method)]
		if !ok {
			t.Errorf("openapi.json lacks %s", key)
			continue
		}
		if op.Role != s.role {
			t.Errorf("openapi.json: %s x-pollwarden-role %q, want %s", key, op.Role, s.role)
		}
		if s.role == "anyone" {
			if op.Security == nil || len(op.Security) != 0 {
				t.Errorf("openapi.json: %s should declare security: []", key)
			}
		} else {
			if len(op.Security) == 0 {
				t.Errorf("openapi.json: %s declares no security", key)
			}
			for _, code := range []string{"401", "403"} {
				if op.Responses[code] == nil {
					t.Errorf("openapi.json: %s lacks answer %s", key, code)
				}
			}
		}
		if s.method == "POST" && op.RequestBody == nil {
			t.Errorf("openapi.json: %s describes no body", key)
		}
		if strings.Contains(s.path, "{id}") && len(op.Parameters) == 0 {
			t.Errorf("openapi.json: %s describes no id parameter", key)
		}
	}
	// Nothing is served that the document does not describe.
	for _, rt := range routes() {
		if _, ok := paths[rt.path][strings.ToLower(rt.method)]; !ok {
			t.Errorf("openapi.json lacks served route %s %s", rt.method, rt.path)
		}
	}
	n := 0
	for _, ops := range paths {
		n += len(ops)
	}
	if n != len(routes()) {
		t.Errorf("openapi.json describes %d operations, the handler serves %d", n, len(routes()))
	}
}

// TestOpenAPIRefsResolve: every $ref in the document points at something.
func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					var at any = doc
					for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
						m, _ := at.(map[string]any)
						at = m[part]
					}
					if at == nil {
						t.Errorf("dangling $ref %s", ref)
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}
