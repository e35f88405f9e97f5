package contract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

const fetchBase = base + `result:
  require: [{path: output_file_id, kind: string}, {path: results_url, kind: url}]
`

func TestResultFetchParses(t *testing.T) {
	for _, tc := range []struct{ fetch, url string }{
		{`{url: "https://api.example.com/files/{output_file_id}/content", max_bytes: 1048576}`, "https://api.example.com/files/{output_file_id}/content"},
		{`{url: "{+results_url}", max_bytes: 10, method: get}`, "{+results_url}"},
	} {
		c, err := Parse([]byte(fetchBase + "  fetch: " + tc.fetch + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.fetch, err)
		}
		if f := c.ResultFetch; f == nil || f.URL != tc.url || f.Method != "GET" || f.MaxBytes == 0 || f.MaxFetches != pollwarden.DefaultMaxFetches {
			t.Fatalf("%s: got %+v", tc.fetch, c.ResultFetch)
		}
	}
}

// TestResultFetchMaxFetches: the bound is read as written, at either end
// of its range.
func TestResultFetchMaxFetches(t *testing.T) {
	for _, n := range []int{1, 100} {
		c, err := Parse([]byte(fetchBase + fmt.Sprintf("  fetch: {url: \"https://api.example.com/f/{job_id}\", max_bytes: 9, max_fetches: %d}\n", n)))
		if err != nil || c.ResultFetch.MaxFetches != n || c.ResultFetch.FetchLimit() != n {
			t.Fatalf("max_fetches %d: %v %+v", n, err, c)
		}
	}
}

func TestResultFetchProblemsHaveLines(t *testing.T) {
	for _, tc := range []struct{ name, fetch, path, contains string }{
		{"no bound", `{url: "https://api.example.com/f/{job_id}"}`, "result.fetch.max_bytes", "missing (required)"},
		{"zero bound", `{url: "https://api.example.com/f/{job_id}", max_bytes: 0}`, "result.fetch.max_bytes", "at least 1"},
		{"huge bound", `{url: "https://api.example.com/f/{job_id}", max_bytes: 999999999999}`, "result.fetch.max_bytes", "16 GiB"},
		{"not a read", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, method: POST}`, "result.fetch.method", "needs safe: true"},
		{"safe GET", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, safe: true}`, "result.fetch.safe", "safe already"},
		{"GET with a body", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, body: {a: b}}`, "result.fetch.body", "sends no body"},
		{"body unknown variable", `{url: "https://api.example.com/f", max_bytes: 9, method: POST, safe: true, body: {a: "{nope}"}}`, "result.fetch.body", "unknown variable {nope}"},
		{"token goes nowhere", `{url: "https://api.example.com/f", max_bytes: 9, next: NextToken}`, "result.fetch.next", "goes nowhere"},
		{"bad next path", `{url: "https://api.example.com/f?t={next_token}", max_bytes: 9, next: "a[["}`, "result.fetch.next", ""},
		{"pages without next", `{url: "https://api.example.com/f", max_bytes: 9, max_pages: 3}`, "result.fetch.max_pages", "give next"},
		{"too many pages", `{url: "https://api.example.com/f?t={next_token}", max_bytes: 9, next: N, max_pages: 99999}`, "result.fetch.max_pages", "at most"},
		{"bad error path", `{url: "https://api.example.com/f", max_bytes: 9, error_path: "a[["}`, "result.fetch.error_path", ""},
		{"unknown variable", `{url: "https://api.example.com/f/{nope}", max_bytes: 9}`, "result.fetch.url", "unknown variable {nope}"},
		{"another origin", `{url: "https://files.example.net/f/{job_id}", max_bytes: 9}`, "result.fetch.url", "not among the status call's origins"},
		{"whole URL of a string field", `{url: "{+output_file_id}", max_bytes: 9}`, "result.fetch.url", "kind: url"},
		{"unknown key", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, size: 3}`, "result.fetch.size", ""},
		{"no fetches", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, max_fetches: 0}`, "result.fetch.max_fetches", "at least 1, got 0"},
		{"negative fetches", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, max_fetches: -2}`, "result.fetch.max_fetches", "at least 1, got -2"},
		{"too many fetches", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, max_fetches: 101}`, "result.fetch.max_fetches", "at most 100, got 101"},
		{"fetches not a number", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, max_fetches: many}`, "result.fetch.max_fetches", "whole number"},
		{"fractional fetches", `{url: "https://api.example.com/f/{job_id}", max_bytes: 9, max_fetches: 2.5}`, "result.fetch.max_fetches", "whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, fetchBase+"  fetch: "+tc.fetch+"\n")
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.contains) {
					if p.Line != 11 {
						t.Fatalf("%s at line %d, want 11", p.Path, p.Line)
					}
					return
				}
			}
			t.Fatalf("no problem at %s containing %q: %+v", tc.path, tc.contains, ps)
		})
	}
}

func TestResultFetchURL(t *testing.T) {
	c, err := Parse([]byte(fetchBase + "  fetch: {url: \"https://api.example.com/files/{output_file_id}/content\", max_bytes: 9}\n"))
	if err != nil {
		t.Fatal(err)
	}
	op := &pollwarden.Operation{ProviderJobID: "j1", Result: []byte(`{"output_file_id":"file-9","results_url":"https://api.example.com/r"}`)}
	if u, err := ResultFetchURL(c, op); err != nil || u != "https://api.example.com/files/file-9/content" {
		t.Fatalf("%s %v", u, err)
	}
	// A field value cannot change the path.
	op.Result = []byte(`{"output_file_id":"..","results_url":"https://api.example.com/r"}`)
	if _, err := ResultFetchURL(c, op); err == nil {
		t.Fatal("a .. file id was accepted")
	}
	whole, err := Parse([]byte(fetchBase + "  fetch: {url: \"{+results_url}\", max_bytes: 9}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"https://evil.example.net/r", "http://api.example.com/r", "https://api.example.com:8443/r", "https://user@api.example.com/r"} {
		op.Result = []byte(`{"output_file_id":"f","results_url":"` + bad + `"}`)
		if _, err := ResultFetchURL(whole, op); err == nil {
			t.Errorf("results_url %s was accepted", bad)
		}
	}
	op.Result = []byte(`{"output_file_id":"f","results_url":"https://api.example.com/v1/batches/b/results"}`)
	if u, err := ResultFetchURL(whole, op); err != nil || u != "https://api.example.com/v1/batches/b/results" {
		t.Fatalf("%s %v", u, err)
	}
}
