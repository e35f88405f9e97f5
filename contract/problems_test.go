package contract

import (
	"errors"
	"strings"
	"testing"
)

// base is a valid contract; cases append to it or replace a line.
const base = `version: 1
name: tiny
status:
  url: https://api.example.com/jobs/{job_id}
state:
  path: status
  pending: [running]
  success: [done]
`

// problems parses src and returns its problem list, failing if it parsed.
func problems(t *testing.T, src string) []Problem {
	t.Helper()
	c, err := Parse([]byte(src))
	if err == nil {
		t.Fatalf("Parse accepted:\n%s\ngot %+v", src, c)
	}
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T %v is not *Problems", err, err)
	}
	return ps.List
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		line     int
		path     string
		contains string
	}{
		{"unknown top key", base + "bogus_key: 1\n", 9, "bogus_key", "unknown key"},
		{"unknown nested key", strings.Replace(base, "  path: status\n", "  path: status\n  pendng: [x]\n", 1), 7, "state.pendng", "unknown key"},
		{"unknown deep key", base + "escalation:\n  extension: {time: 1m, checks: 2}\n", 10, "escalation.extension.checks", "unknown key"},
		{"duplicate key", base + "name: other\n", 9, "name", "duplicate key (first on line 2)"},
		{"bad name", strings.Replace(base, "name: tiny", "name: Tiny_One", 1), 2, "name", `"Tiny_One"`},
		{"missing name", strings.Replace(base, "name: tiny\n", "", 1), 1, "name", "missing (required)"},
		{"bad version", strings.Replace(base, "version: 1", "version: 2", 1), 1, "version", "must be 1"},
		{"missing state.path", strings.Replace(base, "  path: status\n", "", 1), 5, "state.path", "missing (required)"},
		{"missing state", base[:strings.Index(base, "state:")], 1, "state", "missing (required)"},
		{"missing url", strings.Replace(base, "  url: https://api.example.com/jobs/{job_id}\n", "  method: GET\n", 1), 3, "status.url", "missing (required)"},
		{"relative url", strings.Replace(base, "https://api.example.com", "", 1), 4, "status.url", "a path template needs base_url"},
		{"ftp url", strings.Replace(base, "https://", "ftp://", 1), 4, "status.url", "absolute http or https"},
		{"userinfo url", strings.Replace(base, "https://", "https://u:p@", 1), 4, "status.url", "user credentials"},
		{"placeholder in host", strings.Replace(base, "api.example.com", "{job_id}.example.com", 1), 4, "status.url", "may not set the scheme, host or port"},
		{"unknown placeholder", strings.Replace(base, "{job_id}", "{jobid}", 1), 4, "status.url", "unknown variable {jobid}"},
		{"bad duration", base + "backoff: {base: 5 parsecs}\n", 9, "backoff.base", `"5 parsecs"`},
		{"zero duration", base + "limits:\n  deadline: 0s\n", 10, "limits.deadline", "greater than 0"},
		{"huge budget", base + "limits:\n  max_status_requests: 9223372036854775807\n", 10, "limits.max_status_requests", "at most 1000000, got 9223372036854775807"},
		{"huge failures", base + "limits: {max_transport_failures: 1000001}\n", 9, "limits.max_transport_failures", "at most 1000000"},
		{"huge rate-limited", base + "limits: {max_rate_limited: 1000001}\n", 9, "limits.max_rate_limited", "at most 1000000"},
		{"huge deadline", base + "limits: {deadline: 1000000h}\n", 9, "limits.deadline", `at most 8784h (a year), got "1000000h"`},
		{"huge extension", base + "escalation:\n  extension: {time: 15m, status_requests: 9223372036854775807}\n", 10, "escalation.extension.status_requests", "at most 1000000"},
		{"huge extension time", base + "escalation:\n  extension: {time: 8785h}\n", 10, "escalation.extension.time", "at most 8784h"},
		{"ask bound below extension", base + "escalation:\n  extension: {time: 15m, max_time: 10m}\n", 10, "escalation.extension.max_time", "at least escalation.extension.time (15m), got \"10m\""},
		{"ask requests below extension", base + "escalation:\n  extension: {status_requests: 4, max_status_requests: 2}\n", 10, "escalation.extension.max_status_requests", "at least escalation.extension.status_requests (4), got 2"},
		{"ask bound not a duration", base + "escalation:\n  extension: {max_time: soon}\n", 10, "escalation.extension.max_time", "bad duration"},
		{"ask requests quoted", base + "escalation:\n  extension: {max_status_requests: \"20\"}\n", 10, "escalation.extension.max_status_requests", "whole number"},
		{"negative not_found", base + "not_found: {pending_for: -1s}\n", 9, "not_found.pending_for", "0 or more"},
		{"max below base", base + "backoff:\n  base: 10s\n  max: 5s\n", 11, "backoff.max", "at least base"},
		{"budget zero", base + "limits:\n  max_status_requests: 0\n", 10, "limits.max_status_requests", "at least 1"},
		{"budget quoted", base + "limits:\n  max_rate_limited: \"3\"\n", 10, "limits.max_rate_limited", "whole number"},
		{"budget float", base + "limits:\n  max_transport_failures: 2.5\n", 10, "limits.max_transport_failures", "whole number"},
		{"rate negative", base + "limits:\n  deadline: 1m\n  max_requests_per_second: -5\n", 11, "limits.max_requests_per_second", "0 (no ceiling) or more, got \"-5\""},
		{"rate quoted", base + "limits:\n  max_requests_per_second: \"50\"\n", 10, "limits.max_requests_per_second", "must be a number"},
		{"rate word", base + "limits:\n  max_requests_per_second: fast\n", 10, "limits.max_requests_per_second", "must be a number, got \"fast\""},
		{"rate infinite", base + "limits:\n  max_requests_per_second: .inf\n", 10, "limits.max_requests_per_second", "finite"},
		{"rate not a number", base + "limits:\n  max_requests_per_second: .nan\n", 10, "limits.max_requests_per_second", "finite"},
		{"rate list", base + "limits:\n  max_requests_per_second: [50]\n", 10, "limits.max_requests_per_second", "must be a number, got a list"},
		{"bad kind", base + "result:\n  require:\n    - {path: a, kind: link}\n", 11, "result.require[0].kind", `"link"`},
		{"require path missing", base + "result:\n  require:\n    - {kind: url}\n", 11, "result.require[0].path", "missing"},
		{"require not mapping", base + "result:\n  require: [a]\n", 10, "result.require[0]", "must be a mapping"},
		{"overlapping states", strings.Replace(base, "success: [done]", "success: [done, running]", 1), 8, "state.success[1]", `"running" is already listed in state.pending`},
		{"state listed twice", strings.Replace(base, "success: [done]", "success: [done, done]", 1), 8, "state.success[1]", "listed twice"},
		{"no pending", strings.Replace(base, "  pending: [running]\n", "", 1), 5, "state.pending", "at least one pending"},
		{"empty success", strings.Replace(base, "success: [done]", "success: []", 1), 8, "state.success", "at least one success"},
		{"bad unlisted", base + "  unlisted: maybe\n", 9, "state.unlisted", `"maybe"`},
		{"unsafe method", strings.Replace(base, "state:", "  method: POST\nstate:", 1), 5, "status.method", "unsafe_method: true"},
		{"unsafe flag on GET", strings.Replace(base, "state:", "  unsafe_method: true\nstate:", 1), 5, "status.unsafe_method", "GET is safe"},
		{"unsafe flag not bool", strings.Replace(base, "state:", "  method: PUT\n  unsafe_method: sure\nstate:", 1), 6, "status.unsafe_method", "true or false"},
		{"bad method", strings.Replace(base, "state:", "  method: \"GE T\"\nstate:", 1), 5, "status.method", "HTTP method"},
		{"literal secret", strings.Replace(base, "state:", "  credential: {header: Authorization, secret: sk-live-abc}\nstate:", 1), 5, "status.credential.secret", "env:NAME or file:PATH"},
		{"bad env name", strings.Replace(base, "state:", "  credential: {header: X-Key, secret: \"env:1abc\"}\nstate:", 1), 5, "status.credential.secret", "environment variable"},
		{"credential without header", strings.Replace(base, "state:", "  credential:\n    secret: env:TOKEN\nstate:", 1), 5, "status.credential.header", "missing"},
		{"secret header literal", strings.Replace(base, "state:", "  headers: {Authorization: Bearer abc}\nstate:", 1), 5, "status.headers.Authorization", "status.credential"},
		{"header is the credential's", strings.Replace(base, "state:", "  credential: {header: X-Key, secret: env:K}\n  headers: {x-key: abc}\nstate:", 1), 6, "status.headers.x-key", "conflicts"},
		{"header value not string", strings.Replace(base, "state:", "  headers:\n    Accept: [a]\nstate:", 1), 6, "status.headers.Accept", "must be a string"},
		{"bad allowed host", strings.Replace(base, "state:", "  allowed_hosts: [\"https://api.example.com/v1\"]\nstate:", 1), 5, "status.allowed_hosts[0]", "no path"},
		{"allowed host with port", strings.Replace(base, "state:", "  allowed_hosts: [\"api.example.com:8443\"]\nstate:", 1), 5, "status.allowed_hosts[0]", "bare host name or an origin"},
		{"allowed http origin", strings.Replace(base, "state:", "  allowed_hosts: [api.example.com, \"http://dl.example.com\"]\nstate:", 1), 5, "status.allowed_hosts[1]", "unencrypted"},
		{"allowed origin bad port", strings.Replace(base, "state:", "  allowed_hosts: [api.example.com, \"https://dl.example.com:0\"]\nstate:", 1), 5, "status.allowed_hosts[1]", "port 0"},
		{"url port out of range", strings.Replace(base, "api.example.com/", "api.example.com:99999/", 1), 4, "status.url", "out of range"},
		{"url port zero", strings.Replace(base, "api.example.com/", "api.example.com:0/", 1), 4, "status.url", "port 0"},
		{"url port not a number", strings.Replace(base, "api.example.com/", "api.example.com:https/", 1), 4, "status.url", "not a number"},
		{"variable in port", strings.Replace(base, "api.example.com/", "api.example.com:{job_id}/", 1), 4, "status.url", "may not set the scheme, host or port"},
		{"reserved variable after host", strings.Replace(base, "api.example.com/jobs/{job_id}", "api.example.com{+job_id}", 1), 4, "status.url", "may not set the scheme, host or port"},
		{"variable in scheme", strings.Replace(base, "url: https://api.example.com/jobs/{job_id}", "url: \"{job_id}://api.example.com/jobs\"", 1), 4, "status.url", "may not set the scheme, host or port"},
		{"url host not allowed", strings.Replace(base, "state:", "  allowed_hosts: [other.example.com]\nstate:", 1), 4, "status.url", "not in status.allowed_hosts"},
		{"empty allowed hosts", strings.Replace(base, "state:", "  allowed_hosts: []\nstate:", 1), 5, "status.allowed_hosts", "at least one host"},
		{"cancel host", base + "cancel: {url: \"https://evil.example.net/x\"}\n", 9, "cancel.url", "not among the status call's origins"},
		{"cancel without url", base + "cancel: {method: DELETE}\n", 9, "cancel.url", "missing"},
		{"cancel idempotent not bool", base + "cancel: {url: \"https://api.example.com/x\", idempotent: sure}\n", 9, "cancel.idempotent", "true or false"},
		{"console not http", base + "escalation: {console_url: \"javascript:alert(1)\"}\n", 9, "escalation.console_url", "http or https"},
		{"bad state jmespath", strings.Replace(base, "path: status", "path: \"status[\"", 1), 6, "state.path", "JMESPath"},
		{"bad hint jmespath", base + "hints: {next_check_at: \"a..b\"}\n", 9, "hints.next_check_at", "JMESPath"},
		{"bad error_path", base + "result: {error_path: \"!\"}\n", 9, "result.error_path", "JMESPath"},
		{"map for list", strings.Replace(base, "pending: [running]", "pending: {a: b}", 1), 7, "state.pending", "must be a list, got a mapping"},
		{"list for map", base + "limits: [1, 2]\n", 9, "limits", "must be a mapping, got a list"},
		{"list for string", strings.Replace(base, "path: status", "path: [a, b]", 1), 6, "state.path", "must be a string, got a list"},
		{"map in string list", strings.Replace(base, "pending: [running]", "pending: [{a: b}]", 1), 7, "state.pending[0]", "must be a string"},
		{"scalar for map", base + "backoff: fast\n", 9, "backoff", "must be a mapping"},
		{"merge key", base + "limits:\n  <<: {deadline: 1m}\n", 10, "limits.<<", "merge keys"},
		{"not a mapping", "- a\n- b\n", 1, "", "must be a mapping"},
		{"scalar document", "hello\n", 1, "", "must be a mapping"},
		{"empty", "", 1, "", "empty file"},
		{"comments only", "# nothing\n", 1, "", "empty file"},
		{"two documents", base + "---\nversion: 1\n", 9, "", "more than one YAML document"},
		{"syntax error", "version: 1\nname: [a\n", 2, "", "not valid YAML"},
		{"json unknown key", `{"version": 1,
"bogus": true}`, 2, "bogus", "unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list := problems(t, tc.src)
			for _, p := range list {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.contains) {
					if p.Line != tc.line {
						t.Errorf("%s: line %d, want %d", p, p.Line, tc.line)
					}
					return
				}
			}
			t.Errorf("no problem at %q containing %q; got:\n%s", tc.path, tc.contains, (&Problems{List: list}).Error())
		})
	}
}

func TestParseListsEveryProblem(t *testing.T) {
	src := `version: 2
name: Bad Name
bogus_key: 1
status:
  url: ftp://x
  timeout: soon
state:
  pending: [a]
  success: [a]
limits: {max_rate_limited: 0}
`
	list := problems(t, src)
	want := []string{
		"line 1: version: must be 1",
		"line 2: name:",
		"line 3: bogus_key: unknown key",
		"line 5: status.url:",
		"line 6: status.timeout: bad duration \"soon\"",
		"line 7: state.path: missing (required)",
		"line 9: state.success[0]: \"a\" is already listed in state.pending",
		"line 10: limits.max_rate_limited: must be at least 1",
	}
	msg := (&Problems{List: list}).Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("missing %q in:\n%s", w, msg)
		}
	}
	// In file order, one per line.
	lines := strings.Split(msg, "\n")
	if len(lines) != len(list) {
		t.Errorf("%d lines for %d problems", len(lines), len(list))
	}
	for i := 1; i < len(list); i++ {
		if list[i].Line < list[i-1].Line {
			t.Errorf("problems out of order: %v before %v", list[i-1], list[i])
		}
	}
}

// The secret reference may be the secret itself: never echo it.
func TestSecretNotEchoed(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	for _, ref := range []string{secret, "env:" + secret, "ENV:" + secret, "Bearer " + secret} {
		src := strings.Replace(base, "state:", "  credential: {header: Authorization, secret: \""+ref+"\"}\nstate:", 1)
		list := problems(t, src)
		msg := (&Problems{List: list}).Error()
		if strings.Contains(msg, secret) {
			t.Errorf("message echoes the secret: %s", msg)
		}
		if !strings.Contains(msg, "status.credential.secret") {
			t.Errorf("message does not name the key: %s", msg)
		}
	}
	src := strings.Replace(base, "state:", "  headers: {Authorization: \"Bearer "+secret+"\"}\nstate:", 1)
	if msg := (&Problems{List: problems(t, src)}).Error(); strings.Contains(msg, secret) {
		t.Errorf("message echoes a header secret: %s", msg)
	}
}

// What tests outside the project rely on.
func TestExternalExpectations(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(base, "  path: status\n", "", 1)))
	if err == nil || !strings.Contains(err.Error(), "path") {
		t.Errorf("missing state.path: %v", err)
	}
	_, err = Parse([]byte(base + "bogus_key: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "bogus_key") {
		t.Errorf("unknown key: %v", err)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{Line: 3, Path: "state.path", Msg: "missing (required)"}, "line 3: state.path: missing (required)"},
		{Problem{Line: 1, Msg: "empty file"}, "line 1: empty file"},
		{Problem{Msg: "not valid YAML: x"}, "not valid YAML: x"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
