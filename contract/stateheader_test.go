package contract

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// headBlob is an Azure Blob copy wait: a HEAD whose state is the
// x-ms-copy-status header.
const headBlob = `version: 1
name: blob-copy
status:
  url: https://acct.blob.core.windows.net/c/{job_id}
  method: HEAD
state:
  header: x-ms-copy-status
  pending: [pending]
  success: [success]
  failure: [failed]
  cancelled: [aborted]
result:
  require:
    - {header: x-ms-copy-progress, kind: string}
    - {header: X-Ms-Copy-Id}
`

func TestParseStateHeader(t *testing.T) {
	c, err := Parse([]byte(headBlob))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.State.Header != "x-ms-copy-status" || c.State.Path != "" {
		t.Errorf("state = %+v, want header x-ms-copy-status and no path", c.State)
	}
	want := []pollwarden.Field{{Header: "x-ms-copy-progress", Kind: pollwarden.KindString}, {Header: "X-Ms-Copy-Id", Kind: pollwarden.KindPresent}}
	if len(c.Result.Require) != 2 || c.Result.Require[0] != want[0] || c.Result.Require[1] != want[1] {
		t.Errorf("require = %+v, want %+v", c.Result.Require, want)
	}
	if k := c.Result.Require[1].Key(); k != "x-ms-copy-id" {
		t.Errorf("Key = %q, want the lower-case name", k)
	}
	s := Summary(c)
	for _, w := range []string{"x-ms-copy-status response header", "header x-ms-copy-progress (string)"} {
		if !strings.Contains(s, w) {
			t.Errorf("summary lacks %q:\n%s", w, s)
		}
	}
	if got := ResponseHeaders(c); strings.Join(got, ",") != "x-ms-copy-status,x-ms-copy-progress,x-ms-copy-id" {
		t.Errorf("ResponseHeaders = %v", got)
	}
}

func TestParseStateHeaderBad(t *testing.T) {
	get := strings.Replace(headBlob, "  method: HEAD\n", "", 1)
	long := strings.Repeat("x", 129)
	tests := []struct {
		name, src string
		line      int
		path      string
		contains  string
	}{
		{"path and header", strings.Replace(headBlob, "  header: x-ms-copy-status\n", "  header: x-ms-copy-status\n  path: status\n", 1), 7, "state.header", "give path or header, not both"},
		{"header with a space", strings.Replace(headBlob, "header: x-ms-copy-status", "header: x ms", 1), 7, "state.header", "must be a header name (an RFC 9110 token"},
		{"header with a colon", strings.Replace(headBlob, "header: x-ms-copy-status", `header: "a:b"`, 1), 7, "state.header", "must be a header name"},
		{"empty header", strings.Replace(headBlob, "header: x-ms-copy-status", `header: ""`, 1), 7, "state.header", "must be a header name"},
		{"null header", strings.Replace(headBlob, "header: x-ms-copy-status", `header:`, 1), 7, "state.header", "missing (required)"},
		{"header too long", strings.Replace(headBlob, "header: x-ms-copy-status", "header: "+long, 1), 7, "state.header", "at most 128 characters, got 129"},
		{"header a list", strings.Replace(headBlob, "header: x-ms-copy-status", "header: [a]", 1), 7, "state.header", "must be a string"},
		{"field path and header", strings.Replace(headBlob, "{header: X-Ms-Copy-Id}", "{header: X-Ms-Copy-Id, path: id}", 1), 15, "result.require[1].header", "give path or header, not both"},
		{"field bad header", strings.Replace(headBlob, "{header: X-Ms-Copy-Id}", `{header: "X Id"}`, 1), 15, "result.require[1].header", "must be a header name"},
		{"field twice", strings.Replace(headBlob, "{header: X-Ms-Copy-Id}", "{header: X-MS-COPY-PROGRESS}", 1), 15, "result.require[1]", `"x-ms-copy-progress" is required twice`},
		{"field neither", strings.Replace(headBlob, "{header: X-Ms-Copy-Id}", "{kind: string}", 1), 15, "result.require[1].path", "missing (required)"},
		{"field unknown key", strings.Replace(headBlob, "{header: X-Ms-Copy-Id}", "{heder: X-Ms-Copy-Id}", 1), 15, "result.require[1].heder", "unknown key"},
		{"HEAD with state.path", strings.Replace(headBlob, "  header: x-ms-copy-status\n", "  path: status\n", 1), 7, "state.path", "method HEAD answers no body"},
		{"HEAD with a field path", headBlob + "    - {path: id}\n", 13, "result.require[2]", "method HEAD answers no body, so result.require[2].path cannot be read"},
		{"HEAD with error_path", headBlob + "  error_path: error\n", 16, "result.error_path", "method HEAD answers no body"},
		{"HEAD with state.raw", strings.Replace(headBlob, "  pending: [pending]\n", "  raw: status\n  pending: [pending]\n", 1), 8, "state.raw", "method HEAD answers no body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, tc.src)
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.contains) {
					if p.Line != tc.line {
						t.Errorf("line = %d, want %d (%s)", p.Line, tc.line, p.Msg)
					}
					return
				}
			}
			t.Errorf("no problem at %s containing %q; got %+v", tc.path, tc.contains, ps)
		})
	}
	// Without HEAD, body paths beside a state header are fine.
	if _, err := Parse([]byte(get + "    - {path: id}\n  error_path: error\n")); err != nil {
		t.Errorf("GET with state.header and body paths: %v", err)
	}
}

func TestExtractStateHeader(t *testing.T) {
	c, err := Parse([]byte(headBlob))
	if err != nil {
		t.Fatal(err)
	}
	x := mustLoad(t, c)
	h := map[string]string{"x-ms-copy-status": "success", "x-ms-copy-progress": "100/100", "x-ms-copy-id": "abc"}
	f := x.ExtractResponse(200, h, nil)
	if f.Problem != "" || f.State != "success" || !f.HasState || f.Fields["x-ms-copy-progress"] != "100/100" || f.Fields["x-ms-copy-id"] != "abc" {
		t.Errorf("facts = %+v", f)
	}
	// A body on a HEAD answer is not read, even when it is not JSON.
	if f := x.ExtractResponse(200, h, []byte("<html>")); f.Problem != "" || f.State != "success" {
		t.Errorf("body on HEAD: %+v", f)
	}
	// Matched exactly: "Success" is not "success" without case_insensitive.
	if f := x.ExtractResponse(200, map[string]string{"x-ms-copy-status": "Success"}, nil); f.State != "Success" || !f.HasState {
		t.Errorf("exact match: %+v", f)
	}
	for name, hh := range map[string]map[string]string{"absent": nil, "empty": {"x-ms-copy-status": ""}} {
		if f := x.ExtractResponse(200, hh, nil); f.HasState || f.Problem != "state header x-ms-copy-status is absent from the answer" {
			t.Errorf("%s: %+v", name, f)
		}
	}
	// Extract alone (a body, no headers) has no state to read.
	if f := x.Extract([]byte(`{"x-ms-copy-status":"success"}`)); f.HasState {
		t.Errorf("Extract from a body: %+v", f)
	}

	ci, err := Parse([]byte(strings.Replace(headBlob, "state:\n", "state:\n  case_insensitive: true\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if f := mustLoad(t, ci).ExtractResponse(200, map[string]string{"x-ms-copy-status": "SUCCESS"}, nil); f.State != "success" || f.ProviderState != "SUCCESS" {
		t.Errorf("case_insensitive: %+v", f)
	}

	// With GET, a JSON body still gives its fields beside the header state,
	// and a body that is not JSON only leaves them absent.
	g, err := Parse([]byte(strings.Replace(headBlob, "  method: HEAD\n", "", 1) + "    - {path: id}\n"))
	if err != nil {
		t.Fatal(err)
	}
	gx := mustLoad(t, g)
	if f := gx.ExtractResponse(200, h, []byte(`{"id":"j1"}`)); f.State != "success" || f.Fields["id"] != "j1" {
		t.Errorf("GET with body: %+v", f)
	}
	if f := gx.ExtractResponse(200, h, []byte(`not json`)); f.Problem != "" || f.State != "success" || f.Fields["id"] != nil {
		t.Errorf("GET with a body not JSON: %+v", f)
	}
}
