package mcp_test

import (
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestSubmitJobTool: submit_job submits with pollwarden's credential
// through the same controller function as the CLI and the API; the same
// call again resumes and submits nothing; wait_job then sees the job end.
func TestSubmitJobTool(t *testing.T) {
	r := newRig(t)
	r.srv.Script("sub-1", fp.State("succeeded", map[string]any{"result": map[string]any{"url": "https://files.example/sub-1.csv"}}))
	args := map[string]any{"contract": "mcp-test", "body": map[string]any{"report": "q3"}}
	first, text, isErr := r.call("submit_job", args)
	if isErr || first["provider_job_id"] != "sub-1" || first["phase"] != "waiting" {
		t.Fatalf("submit_job: %v %s", first, text)
	}
	again, text, isErr := r.call("submit_job", args)
	if isErr || again["operation_id"] != first["operation_id"] || r.srv.Submits() != 1 {
		t.Fatalf("again: %v %s; %d submissions", again, text, r.srv.Submits())
	}
	done, text, _ := r.call("wait_job", map[string]any{"operation_id": first["operation_id"]})
	if done["phase"] != "succeeded" {
		t.Fatalf("wait_job: %v %s", done, text)
	}
	if _, text, isErr := r.call("submit_job", map[string]any{"contract": "mcp-test"}); !isErr || !strings.Contains(text, "body") {
		t.Fatalf("no body: %v %s", isErr, text)
	}
}
