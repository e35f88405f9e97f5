package builtin_test

import (
	"net/http"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// TestReplayAzureBlobCopy: the copy's state is the x-ms-copy-status header
// of a HEAD on the destination blob, with no body; each request is a HEAD
// to the blob's path with the Bearer credential and x-ms-version (Entra ID
// needs 2017-11-09 or later). The headers the fixtures carry are the ones
// Get Blob Properties documents.
func TestReplayAzureBlobCopy(t *testing.T) {
	const blob = "backups/2026/db.bak"
	scenarios := []scenario{
		{name: "succeeded", bodies: []string{"pending", "running_description", "succeeded"}, jobID: blob, path: "/" + blob,
			outcome: pollwarden.PhaseSucceeded, story: "state pending → success",
			result: map[string]any{"x-ms-copy-progress": "1073741824/1073741824", "x-ms-copy-id": "36650d67-05c9-4a24-9a7d-a2213e53caf6"}},
		{name: "failed", bodies: []string{"pending", "failed"}, jobID: blob, outcome: pollwarden.PhaseFailed, story: "state pending → failed"},
		{name: "aborted", bodies: []string{"aborted"}, jobID: blob, outcome: pollwarden.PhaseCancelled, story: "state aborted"},
		{name: "server busy", bodies: []string{"server_busy", "succeeded"}, jobID: blob, outcome: pollwarden.PhaseSucceeded, story: "received 503"},
		{name: "no such blob", bodies: []string{"error"}, jobID: blob, outcome: pollwarden.PhaseEscalated, reason: pollwarden.ReasonIntegrationFailure, story: "received 404"},
	}
	runReplays(t, "azure-blob-copy", scenarios)
	_, fake := replay(t, "azure-blob-copy", scenarios[0])
	if len(fake.requests) != 3 {
		t.Fatalf("%d requests, want 3", len(fake.requests))
	}
	for _, r := range fake.requests {
		if r.Method != http.MethodHead || r.Header.Get("x-ms-version") != "2024-11-04" {
			t.Errorf("%s with x-ms-version %q, want HEAD with 2024-11-04", r.Method, r.Header.Get("x-ms-version"))
		}
	}
}
