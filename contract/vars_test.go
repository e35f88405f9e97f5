package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

const varsContract = `version: 1
name: gh
vars:
  owner: {pattern: "[A-Za-z0-9_.-]+"}
  repo: {pattern: "^[A-Za-z0-9_.-]+$", default: pollwarden}
  op: {pattern: "projects/[a-z0-9-]+/operations/[a-z0-9-]+"}
status:
  url: "https://api.github.com/repos/{owner}/{repo}/actions/runs/{job_id}"
state: {path: status, pending: [queued], success: [completed]}
cancel: {url: "https://api.github.com/v1/{+op}:cancel"}
escalation: {console_url: "https://github.com/{owner}/{repo}/actions/runs/{job_id}"}
`

func TestVarsExpandIntoTemplates(t *testing.T) {
	c, err := Parse([]byte(varsContract))
	if err != nil {
		t.Fatal(err)
	}
	vars, err := OperationVars(c, map[string]string{"owner": "acme", "op": "projects/p/operations/o1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if vars["repo"] != "pollwarden" || vars["owner"] != "acme" {
		t.Fatalf("vars %v: want the default filled in", vars)
	}
	got, err := StatusURLFor(c, "42", vars)
	if want := "https://api.github.com/repos/acme/pollwarden/actions/runs/42"; err != nil || got != want {
		t.Fatalf("StatusURLFor = %q, %v; want %q", got, err, want)
	}
	got, err = CancelURLFor(c, "42", vars)
	if want := "https://api.github.com/v1/projects/p/operations/o1:cancel"; err != nil || got != want {
		t.Fatalf("CancelURLFor = %q, %v; want %q ({+op} keeps its slashes)", got, err, want)
	}
}

func TestOperationVarsRefusals(t *testing.T) {
	c, err := Parse([]byte(varsContract))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		given     map[string]string
		statusURL bool
		want      string
	}{
		"undeclared":       {map[string]string{"owner": "a", "branch": "main"}, false, `variable "branch": not declared by contract gh (it declares op, owner, repo)`},
		"outside pattern":  {map[string]string{"owner": "a/b"}, false, `variable owner: value "a/b" does not match its pattern`},
		"pattern anchored": {map[string]string{"owner": "a", "op": "x projects/p/operations/o"}, false, "variable op: value"},
		"missing":          {map[string]string{}, false, "variable owner: required by the status URL and has no default"},
		"job_id":           {map[string]string{"owner": "a", "job_id": "1"}, false, "variable job_id"},
		"bad with url":     {map[string]string{"owner": "../x"}, true, "variable owner"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := OperationVars(c, tc.given, tc.statusURL)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, pollwarden.ErrInvalid) {
				t.Fatalf("OperationVars(%v) = %v; want a refusal with %q", tc.given, err, tc.want)
			}
		})
	}
	if v, err := OperationVars(c, nil, true); err != nil || v["repo"] != "pollwarden" {
		t.Fatalf("with a status URL nothing is required: %v, %v", v, err)
	}
	plain, err := Parse([]byte(strings.Replace(varsContract, "vars:", "x_vars:", 1)))
	if err == nil {
		t.Fatalf("parse of a template with undeclared variables succeeded: %+v", plain)
	}
}

func TestVarsParseProblems(t *testing.T) {
	for name, tc := range map[string]struct{ vars, url, want string }{
		"no pattern":        {"{owner: {default: x}}", "https://h/{owner}/{job_id}", "vars.owner.pattern: missing"},
		"bad pattern":       {"{owner: {pattern: \"(\"}}", "https://h/{owner}/{job_id}", "vars.owner.pattern: not a valid regular expression"},
		"default off":       {"{owner: {pattern: \"[a-z]+\", default: \"A1\"}}", "https://h/{owner}/{job_id}", "vars.owner.default: default \"A1\" does not match"},
		"job_id declared":   {"{job_id: {pattern: x}}", "https://h/{job_id}", "vars.job_id: {job_id} is always defined"},
		"bad name":          {"{\"a-b\": {pattern: x}}", "https://h/{job_id}", "a variable name is"},
		"unknown key":       {"{owner: {pattern: x, values: [a]}}", "https://h/{owner}/{job_id}", "vars.owner.values: unknown key"},
		"host from var":     {"{host: {pattern: \"[a-z.]+\"}}", "https://{host}/{job_id}", "a variable may not set the scheme, host or port"},
		"port from var":     {"{port: {pattern: \"[0-9]+\"}}", "https://h:{port}/{job_id}", "a variable may not set the scheme, host or port"},
		"undeclared in url": {"{owner: {pattern: x}}", "https://h/{repo}/{job_id}", "unknown variable {repo}"},
	} {
		t.Run(name, func(t *testing.T) {
			src := "version: 1\nname: v\nvars: " + tc.vars + "\nstatus: {url: \"" + tc.url + "\"}\nstate: {path: s, pending: [a], success: [b]}\n"
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v; want %q", err, tc.want)
			}
		})
	}
}
