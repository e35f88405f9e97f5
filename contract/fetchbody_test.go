package contract

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// pagedFetch is a Textract-like fetch: a POST read whose body carries the
// job id, the token of the next page and a result field.
const pagedFetch = `  fetch:
    url: "https://api.example.com/"
    method: POST
    safe: true
    body: {JobId: "{job_id}", NextToken: "{next_token}", File: "{output_file_id}"}
    next: NextToken
    error_path: error
    max_pages: 4
    max_bytes: 4096
`

func TestResultFetchBodyAndPages(t *testing.T) {
	c, err := Parse([]byte(fetchBase + pagedFetch))
	if err != nil {
		t.Fatal(err)
	}
	f := c.ResultFetch
	if f.Method != "POST" || !f.Safe || !f.Paged() || f.MaxPages != 4 || f.ErrorPath != "error" {
		t.Fatalf("got %+v", f)
	}
	if got := Summary(c); !strings.Contains(got, "fetch:      POST https://api.example.com/; at most 4096 bytes, a documented read, body ") ||
		!strings.Contains(got, "fails on error, pages by NextToken, at most 4, as JSON Lines") {
		t.Errorf("summary:\n%s", got)
	}
	op := &pollwarden.Operation{ProviderJobID: `j"1`, Result: []byte(`{"output_file_id":"file-9","results_url":"https://api.example.com/r"}`)}
	p, err := NewResultPager(c, op)
	if err != nil {
		t.Fatal(err)
	}
	// The first page sends no NextToken at all (Textract refuses an
	// empty one); the job id stays inside its JSON string.
	u, body, err := p.Page("")
	if err != nil || u != "https://api.example.com/" || string(body) != `{"File":"file-9","JobId":"j\"1"}` {
		t.Fatalf("first page: %s %s %v", u, body, err)
	}
	_, body, err = p.Page(`tok","x":"y`)
	if err != nil || string(body) != `{"File":"file-9","JobId":"j\"1","NextToken":"tok\",\"x\":\"y"}` {
		t.Fatalf("second page: %s %v", body, err)
	}
	for _, tc := range []struct{ page, next, problem string }{
		{`{"Blocks":[],"NextToken":"t2"}`, "t2", ""},
		{`{"Blocks":[]}`, "", ""},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Task not found"}}`, "", "Task not found"},
		{`not json`, "", "not JSON"},
	} {
		next, problem := ResultPage(c, []byte(tc.page))
		if next != tc.next || (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
			t.Errorf("%s: next %q problem %q", tc.page, next, problem)
		}
	}
}

func TestResultFetchTokenInURL(t *testing.T) {
	c, err := Parse([]byte(fetchBase + "  fetch: {url: \"https://api.example.com/r/{job_id}{?page_token}\", max_bytes: 9, next: next}\n"))
	if err == nil || !strings.Contains(err.Error(), "goes nowhere") {
		t.Fatalf("a token in no template: %v", err)
	}
	c, err = Parse([]byte(fetchBase + "  fetch: {url: \"https://api.example.com/r/{job_id}?t={next_token}\", max_bytes: 9, next: next}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewResultPager(c, &pollwarden.Operation{ProviderJobID: "j"})
	if u, _, err := p.Page("a/b&c"); err != nil || u != "https://api.example.com/r/j?t=a%2Fb%26c" {
		t.Fatalf("%s %v", u, err)
	}
}

func TestCancelBody(t *testing.T) {
	src := strings.Replace(base, "version: 1\n", "version: 1\ncancel: {url: \"https://api.example.com/rpc\", body: {method: tasks/cancel, params: {taskId: \"{job_id}\"}}}\n", 1)
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := CancelBody(c, `t"1`, nil)
	if err != nil || string(b) != `{"method":"tasks/cancel","params":{"taskId":"t\"1"}}` {
		t.Fatalf("%s %v", b, err)
	}
	for bad, want := range map[string]string{
		`cancel: {url: "https://api.example.com/rpc", method: GET, body: {a: b}}`:    "sends no body",
		`cancel: {url: "https://api.example.com/rpc", body: {taskId: "{task}"}}`:     "unknown variable {task}",
		`cancel: {url: "https://other.example.com/rpc", body: {taskId: "{job_id}"}}`: "not among the status call's origins",
	} {
		if _, err := Parse([]byte(strings.Replace(base, "version: 1\n", "version: 1\n"+bad+"\n", 1))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

func TestHeaderTemplates(t *testing.T) {
	src := strings.Replace(base, "  url: https://api.example.com/jobs/{job_id}\n",
		"  url: https://api.example.com/jobs/{job_id}\n  headers: {Mcp-Name: \"{job_id}\", X-Fixed: one}\n", 1)
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	h, err := RequestHeaders(c, "task-7", nil)
	if err != nil || h["Mcp-Name"] != "task-7" || h["X-Fixed"] != "one" {
		t.Fatalf("%v %v", h, err)
	}
	if f := FixedHeaders(c); f["Mcp-Name"] != "" || f["X-Fixed"] != "one" {
		t.Fatalf("fixed headers %v", f)
	}
	// A job id from a provider cannot add a header.
	for _, evil := range []string{"t\r\nX-Evil: 1", "t\nx", "t\x00"} {
		if _, err := RequestHeaders(c, evil, nil); err == nil || !strings.Contains(err.Error(), "line break") {
			t.Errorf("job id %q: %v", evil, err)
		}
	}
	bad := strings.Replace(src, `"{job_id}"`, `"{task}"`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "unknown variable {task}") {
		t.Errorf("unknown header variable: %v", err)
	}
}

// TestWildcardOriginForSubmitAndResult: submit and result.fetch take the
// same origin check as status and cancel, wildcard entries included.
func TestWildcardOriginForSubmitAndResult(t *testing.T) {
	src := strings.Replace(fetchBase, "  url: https://api.example.com/jobs/{job_id}\n",
		"  url: https://api.example.com/jobs/{job_id}\n  allowed_hosts: [api.example.com, \"*.files.example.com\"]\n", 1)
	ok := src + "  fetch: {url: \"https://eu.files.example.com/f/{output_file_id}\", max_bytes: 9}\n" +
		"submit: {url: \"https://us.files.example.com/jobs\", job_id_path: id}\n"
	c, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if u, err := SubmitURL(c, nil); err != nil || u != "https://us.files.example.com/jobs" {
		t.Fatalf("submit %s %v", u, err)
	}
	for _, bad := range []string{"https://a.b.files.example.com/f", "https://eu.files.example.com:8443/f", "http://eu.files.example.com/f"} {
		for _, block := range []string{
			"  fetch: {url: \"" + bad + "\", max_bytes: 9}\n",
			"submit: {url: \"" + bad + "\", job_id_path: id}\n",
		} {
			if _, err := Parse([]byte(src + block)); err == nil || !strings.Contains(err.Error(), "not among the status call's origins") {
				t.Errorf("%s: %v", block, err)
			}
		}
	}
}
