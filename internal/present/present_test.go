package present_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/internal/present"
	"github.com/pollwarden/pollwarden/policy"
)

// The github-actions-run console_url names {owner} and {repo}: the
// console's provider link and the escalation's "inspect" option must both
// expand them from the operation's vars, not leave "///" behind.
func TestConsoleLinkUsesTheOperationsVars(t *testing.T) {
	ex, err := contract.Builtin("github-actions-run")
	if err != nil {
		t.Fatal(err)
	}
	c := ex.Spec()
	op := &pollwarden.Operation{Vars: map[string]string{"owner": "acme", "repo": "api"}, ProviderJobID: "123"}
	const want = "https://github.com/acme/api/actions/runs/123"
	link, ok := present.ConsoleLink(c.Escalation.ConsoleURL, op)
	if !ok || link != want {
		t.Fatalf("console link = %q, %v; want %q", link, ok, want)
	}
	var label string
	for _, o := range policy.Options(op, c, pollwarden.ReasonDeadlineExceeded, time.Now()) {
		if o.ID == pollwarden.OptionInspect {
			label = o.Label
		}
	}
	if !strings.HasSuffix(label, ": "+link) {
		t.Fatalf("inspect option %q does not end with the console link %q", label, link)
	}
}

// A template that does not expand gives no link rather than a broken one.
func TestConsoleLinkRefusesABadTemplate(t *testing.T) {
	if link, ok := present.ConsoleLink("https://x.example/{job_id", &pollwarden.Operation{ProviderJobID: "1"}); ok {
		t.Fatalf("bad template expanded to %q", link)
	}
}

// Every delay source has words of its own, the same in every medium
// (story, CLI, MCP): none falls through to its raw value.
func TestEveryDelaySourceHasWords(t *testing.T) {
	seen := map[string]pollwarden.DelaySource{}
	for _, s := range []pollwarden.DelaySource{pollwarden.DelayRetryAfter, pollwarden.DelayPollHint,
		pollwarden.DelayLocalBackoff, pollwarden.DelayManualExtension, pollwarden.DelayCallback,
		pollwarden.DelaySharedQuota, pollwarden.DelayProviderIncident} {
		w := present.DelaySource(s)
		if w == "" || w == string(s) {
			t.Errorf("%s has no words: %q", s, w)
		}
		if o, dup := seen[w]; dup {
			t.Errorf("%s and %s both read %q", s, o, w)
		}
		seen[w] = s
	}
	if got := present.DelaySource("odd\nsource"); strings.Contains(got, "\n") {
		t.Errorf("an unknown source reaches the reader raw: %q", got)
	}
}
