package cli

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// TestResumeCommandQuotesAndMasks: the printed resume command can be
// pasted into a shell as it is (odd characters quoted), and a PostgreSQL
// store's password never reaches the terminal.
func TestResumeCommandQuotesAndMasks(t *testing.T) {
	op := &pollwarden.Operation{ID: "op 1", Contract: "export", ProviderJobID: "it's"}
	got := resumeCommand(op, "my contracts/c.yaml", "postgres://pw:s3cret-pass@127.0.0.1:5432/db?schema=x")
	want := `pollwarden wait --contract 'my contracts/c.yaml' --job-id 'it'\''s' --operation-id 'op 1' --store 'postgres://pw:xxxxx@127.0.0.1:5432/db?schema=x'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("the store's password is printed: %s", got)
	}
	if got := resumeCommand(&pollwarden.Operation{ID: "op-2", Contract: "c", StatusURL: "https://x.example/jobs/1"}, "c", ""); got !=
		"pollwarden wait --contract c --status-url https://x.example/jobs/1 --operation-id op-2" {
		t.Errorf("status URL form: %s", got)
	}
}
