package operations_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/operations"
)

// TestSubmitNeedsStatusVarsOnlyWithoutStatusLocation: a submission whose
// answer names its status resource (an Azure 202's Operation-Location)
// is not asked for the variables of status.url; one polled at status.url
// with the job id is.
func TestSubmitNeedsStatusVarsOnlyWithoutStatusLocation(t *testing.T) {
	for _, tc := range []struct{ submit, problem string }{
		{`{url: "/{+path}", status_location: "header:Azure-AsyncOperation"}`, ""},
		{`{url: "/{+path}", job_id_path: id}`, "variable sub: required by the status URL"},
	} {
		c, err := contract.Parse([]byte(`version: 1
name: arm
base_url: https://api.example.com
vars:
  sub: {pattern: "^[a-z0-9]+$"}
  path: {pattern: "^[a-z]+(/[a-z]+)*$"}
status: {url: "/subs/{sub}/ops/{job_id}"}
state: {path: status, pending: [running], success: [done]}
submit: ` + tc.submit + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		ex, err := contract.Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = operations.Check(operations.Options{Contracts: operations.Only(ex)}, operations.CreateParams{
			Caller: operations.Caller{Local: true, Owner: "cli:alice"},
			CreateRequest: operations.CreateRequest{Contract: "arm", Vars: map[string]string{"path": "a/b"},
				Submit: &operations.SubmitParams{Body: json.RawMessage(`{"x":1}`)}}})
		if (tc.problem == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.problem)) {
			t.Errorf("%s: %v, want %q", tc.submit, err, tc.problem)
		}
	}
}
