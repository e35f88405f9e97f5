package main

import (
	"slices"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServePrunedIDStaysTaken: agent A's operation finishes and `ops
// prune` (real process, same store) removes its record. Agent B (real
// serve) then reads the pruned id word for word as an id that does not
// exist, and creating it is refused as an id someone else holds: B never
// gets an operation whose story begins with A's pruned events. A cannot
// take it again either.
func TestServePrunedIDStaysTaken(t *testing.T) {
	t.Parallel()
	srv, base, p := tenantServe(t)
	const id, job = "old-op-of-a", "job-done-9k"
	srv.Script(job, fp.State("succeeded", map[string]any{"result": map[string]any{"url": "https://files.example.com/r.csv"}}))
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"`+id+`","contract":"proc-test","job_id":"`+job+`"}`, 201)
	waitFor(t, "A's operation to succeed", func() bool {
		return call(t, base, tokA, "GET", "/v1/operations/"+id+"?wait=5s", "", 200)["phase"] == "succeeded"
	})
	store := p.cmd.Args[slices.Index(p.cmd.Args, "--store")+1]
	waitFor(t, "ops prune to remove the finished operation", func() bool {
		pr := start(t, "ops", "prune", "--older-than", "1ms", "--store", store)
		if code := pr.exitCode(t); code != 0 {
			t.Fatalf("ops prune exited %d: %s", code, pr.stderr.String())
		}
		return strings.HasPrefix(pr.stdout.String(), "pruned 1 operation ")
	})

	for _, r := range []struct{ what, method, path, accept string }{
		{"GET", "GET", "/v1/operations/{id}", ""},
		{"long-poll", "GET", "/v1/operations/{id}?wait=1s", ""},
		{"audit as text", "GET", "/v1/operations/{id}/audit", ""},
		{"audit as JSON", "GET", "/v1/operations/{id}/audit", "application/json"},
	} {
		for _, tok := range []string{tokB, tokA} {
			code, got := send(t, base, tok, r.method, strings.ReplaceAll(r.path, "{id}", id), "", r.accept)
			wantCode, want := send(t, base, tok, r.method, strings.ReplaceAll(r.path, "{id}", "no-such-op"), "", r.accept)
			if code != wantCode || strings.ReplaceAll(got, id, "no-such-op") != want {
				t.Errorf("%s of the pruned id: %d %s; for an id that does not exist %d %s", r.what, code, got, wantCode, want)
			}
		}
	}

	// Creating the pruned id: refused as for an id another agent holds
	// (A's live operation opA), word for word but the id.
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"`+opA+`","contract":"proc-test","job_id":"`+jobA+`"}`, 201)
	for _, tok := range []string{tokB, tokA} {
		code, got := send(t, base, tok, "POST", "/v1/operations", `{"operation_id":"`+id+`","contract":"proc-test","job_id":"job-of-b-2"}`, "")
		_, held := send(t, base, tokB, "POST", "/v1/operations", `{"operation_id":"`+opA+`","contract":"proc-test","job_id":"job-of-b-2"}`, "")
		if code != 409 || strings.ReplaceAll(got, id, opA) != held {
			t.Errorf("create of the pruned id: %d %s; for an id another agent holds: %s", code, got, held)
		}
		for _, leak := range []string{"pruned", job} {
			if strings.Contains(got, leak) {
				t.Errorf("create of the pruned id answers %q: %s", leak, got)
			}
		}
	}
	code, story := send(t, base, tokB, "GET", "/v1/operations/"+id+"/audit", "", "")
	if code != 404 || strings.Contains(story, "pruned") {
		t.Errorf("after the refused creates B reads the pruned id's story: %d %s", code, story)
	}
}
