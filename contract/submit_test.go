package contract

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestParseSubmit(t *testing.T) {
	c, err := Parse([]byte(base + `submit: {url: "/v1/exports", idempotency_key_header: Idempotency-Key, job_id_path: id, status_location: "header:Operation-Location"}
base_url: https://api.example.com
`))
	if err != nil {
		t.Fatal(err)
	}
	if sum := Summary(c); !strings.Contains(sum, "submit:     POST https://api.example.com/v1/exports; job id at id, status from header:Operation-Location, Idempotency-Key sent with a stored key, up to 3 times") {
		t.Errorf("contract check does not show the submission:\n%s", sum)
	}
	s := c.Submit
	if s == nil || s.URL != "https://api.example.com/v1/exports" || s.Method != "POST" || s.MaxAttempts != 3 ||
		s.IdempotencyKeyHeader != "Idempotency-Key" || s.StatusLocation != "header:Operation-Location" {
		t.Fatalf("submit %+v", s)
	}
	c, err = Parse([]byte(base + "submit: {url: \"https://api.example.com/v1/exports\", job_id_path: id}\n"))
	if err != nil || c.Submit.MaxAttempts != 1 || c.Submit.StatusLocation != "" {
		t.Fatalf("submit without key: %+v, %v", c.Submit, err)
	}
	c, err = Parse([]byte(base + "submit: {url: \"https://api.example.com/v1/exports\", status_location: \"header:Operation-Location\"}\n"))
	if err != nil || c.Submit.JobIDPath != "" {
		t.Fatalf("a status location without job_id_path: %+v, %v", c.Submit, err)
	}
}

func TestParseSubmitBad(t *testing.T) {
	for _, tc := range []struct{ name, block, path, contains string }{
		{"other origin", `{url: "https://evil.example/v1", job_id_path: id}`, "submit.url", "not among the status call's origins"},
		{"plain http", `{url: "http://api.example.com/v1", job_id_path: id}`, "submit.url", "not among the status call's origins"},
		{"no job id path", `{url: "https://api.example.com/v1"}`, "submit.job_id_path", "required"},
		{"bad location", `{url: "https://api.example.com/v1", job_id_path: id, status_location: "Location"}`, "submit.status_location", "header:NAME"},
		{"bad path", `{url: "https://api.example.com/v1", job_id_path: "a[", status_location: "body:x"}`, "submit.job_id_path", "JMESPath"},
		{"retries without key", `{url: "https://api.example.com/v1", job_id_path: id, max_attempts: 3}`, "submit.max_attempts", "never sent twice"},
		{"unknown key", `{url: "https://api.example.com/v1", job_id_path: id, retry: true}`, "submit.retry", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, base+"submit: "+tc.block+"\n")
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.contains) && p.Line == 9 {
					return
				}
			}
			t.Fatalf("problems %+v, want one at %s line 9 containing %q", ps, tc.path, tc.contains)
		})
	}
}

func TestSubmitAnswer(t *testing.T) {
	hdr := func(name string) string {
		if name == "Operation-Location" {
			return "https://api.example.com/ops/7"
		}
		return ""
	}
	for _, tc := range []struct{ loc, body, job, at, problem string }{
		{"header:Operation-Location", `{"id":"j7"}`, "j7", "https://api.example.com/ops/7", ""},
		{"body:links.status", `{"id":42,"links":{"status":"https://api.example.com/s/42"}}`, "42", "https://api.example.com/s/42", ""},
		{"", `{"data":{"id":"x"}}`, "", "", "no job id"},
		{"body:links.status", `{"id":"j"}`, "j", "", "no status location"},
		{"", `not json`, "", "", "no job id"},
	} {
		s := &pollwarden.SubmitSpec{JobIDPath: "id", StatusLocation: tc.loc}
		job, at, problem := SubmitAnswer(s, hdr, []byte(tc.body))
		if job != tc.job || at != tc.at || !strings.Contains(problem, tc.problem) || (tc.problem == "") != (problem == "") {
			t.Errorf("%s %s: got %q %q %q", tc.loc, tc.body, job, at, problem)
		}
	} // Without job_id_path the status location names the job: an empty
	// body is no problem, a missing header is.
	s := &pollwarden.SubmitSpec{StatusLocation: "header:Operation-Location"}
	if job, at, problem := SubmitAnswer(s, hdr, nil); job != "" || at != "https://api.example.com/ops/7" || problem != "" {
		t.Errorf("header only: got %q %q %q", job, at, problem)
	}
	s.StatusLocation = "header:Azure-AsyncOperation"
	if _, _, problem := SubmitAnswer(s, hdr, nil); !strings.Contains(problem, "no status location") {
		t.Errorf("no header: problem %q", problem)
	}
}
