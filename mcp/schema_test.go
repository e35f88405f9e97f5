package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// specDefinitions maps each protocol version whose schema.json is in
// testdata to where it keeps its definitions: draft-07 "definitions" until
// 2025-06-18, 2020-12 "$defs" since 2025-11-25.
func specDefinitions() map[string]string {
	return map[string]string{"2025-06-18": "definitions", "2025-11-25": "$defs"}
}

// rawServer is `pollwarden mcp` spoken to in raw JSON-RPC lines, so the
// test sees the bytes the server writes, not a client library's reading
// of them.
type rawServer struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
	nextID int
}

func startRaw(t *testing.T) *rawServer {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: schema-test
status: {url: "%s/jobs/{job_id}"}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
limits: {deadline: 60s, max_status_requests: 5}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(contracts, "schema-test.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "mcp", "--store", filepath.Join(dir, "pw.db"), "--contracts", contracts)
	cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1")
	r := &rawServer{t: t, stderr: &syncBuffer{}}
	cmd.Stderr = r.stderr
	var err error
	if r.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.out = bufio.NewScanner(stdout)
	r.out.Buffer(make([]byte, 1<<20), 1<<24)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.in.Close(); _ = cmd.Wait() })
	return r
}

// call sends a request and returns its raw result, skipping the
// notifications the server sends meanwhile.
func (r *rawServer) call(method string, params any) json.RawMessage {
	r.t.Helper()
	r.nextID++
	r.send(map[string]any{"jsonrpc": "2.0", "id": r.nextID, "method": method, "params": params})
	for r.out.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(r.out.Bytes(), &m); err != nil {
			r.t.Fatalf("%s: the server wrote a line that is not JSON-RPC: %q", method, r.out.Text())
		}
		if m.ID == nil || *m.ID != r.nextID {
			continue
		}
		if m.Error != nil {
			r.t.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
	r.t.Fatalf("%s: no answer (%v); stderr: %s", method, r.out.Err(), r.stderr.String())
	return nil
}

func (r *rawServer) send(msg map[string]any) {
	r.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		r.t.Fatal(err)
	}
}

// specSchema compiles one definition of the specification's schema.json
// for version.
func specSchema(t *testing.T, version, definition string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "mcpspec", version, "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://modelcontextprotocol.io/schema/" + version + "/schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url + "#/" + specDefinitions()[version] + "/" + definition)
	if err != nil {
		t.Fatalf("%s %s: %v", version, definition, err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, what string, raw json.RawMessage) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s does not conform to the MCP specification: %v", what, err)
	}
}

// TestPublishedSchemasConformToTheSpecification negotiates each protocol
// version of the spec's released schemas in testdata with the real server
// and validates its answers against that version's schema.json: the
// tools/list result (ListToolsResult: every tool's input and output
// schema), the initialize and resource-template answers. Each tool schema
// must also be a valid JSON Schema, and a property schema is never the
// boolean true or false, which the spec's "properties: {[key]: object}"
// and the TypeScript SDK refuse.
func TestPublishedSchemasConformToTheSpecification(t *testing.T) {
	for version := range specDefinitions() {
		t.Run(version, func(t *testing.T) {
			r := startRaw(t)
			init := r.call("initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "schema-test", "version": "0"}})
			var got struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if err := json.Unmarshal(init, &got); err != nil || got.ProtocolVersion != version {
				t.Fatalf("initialize with %s negotiated %q (%v): %s", version, got.ProtocolVersion, err, init)
			}
			validate(t, specSchema(t, version, "InitializeResult"), "initialize result", init)
			r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})

			tools := r.call("tools/list", map[string]any{})
			validate(t, specSchema(t, version, "ListToolsResult"), "tools/list result", tools)
			templates := r.call("resources/templates/list", map[string]any{})
			validate(t, specSchema(t, version, "ListResourceTemplatesResult"), "resources/templates/list result", templates)

			var list struct {
				Tools []struct {
					Name         string          `json:"name"`
					InputSchema  json.RawMessage `json:"inputSchema"`
					OutputSchema json.RawMessage `json:"outputSchema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(tools, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) != 7 {
				t.Fatalf("tools/list has %d tools, want 7: %s", len(list.Tools), tools)
			}
			for _, tl := range list.Tools {
				for kind, raw := range map[string]json.RawMessage{"inputSchema": tl.InputSchema, "outputSchema": tl.OutputSchema} {
					what := tl.Name + " " + kind
					if len(raw) == 0 {
						t.Errorf("%s is missing", what)
						continue
					}
					compileToolSchema(t, what, raw)
					var v any
					if err := json.Unmarshal(raw, &v); err != nil {
						t.Fatal(err)
					}
					for _, p := range booleanProperties(v, "") {
						t.Errorf("%s: property %s has a boolean schema; hosts want an object", what, p)
					}
				}
			}
		})
	}
}

// compileToolSchema checks that raw is a valid JSON Schema (2020-12, the
// default the specification names) by compiling it against its
// meta-schema.
func compileToolSchema(t *testing.T, what string, raw json.RawMessage) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "urn:pollwarden:" + strings.ReplaceAll(what, " ", ":")
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile(url); err != nil {
		t.Errorf("%s is not a valid JSON Schema: %v", what, err)
	}
}

// booleanProperties returns the paths of the property schemas under v, at
// any depth, that are true or false instead of an object.
func booleanProperties(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			if props, ok := sub.(map[string]any); ok && k == "properties" {
				for name, ps := range props {
					if _, isBool := ps.(bool); isBool {
						out = append(out, path+"/properties/"+name)
					}
				}
			}
			out = append(out, booleanProperties(sub, path+"/"+k)...)
		}
	case []any:
		for i, sub := range x {
			out = append(out, booleanProperties(sub, fmt.Sprintf("%s/%d", path, i))...)
		}
	}
	return out
}
