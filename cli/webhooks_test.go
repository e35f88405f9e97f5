package cli

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden/webhook"
)

// TestUnlinkedReceiversWarn: Slack and e-mail receivers without
// console_url are named in a warning (their messages could not lead a
// person to the console); with console_url, or with signed JSON
// receivers only, there is nothing to say.
func TestUnlinkedReceiversWarn(t *testing.T) {
	const people = `webhooks:
  - {name: chat, format: slack, url: env:SLACK_URL}
  - {name: ci, url: https://ci.example.com/hook, secret: env:HOOK_SECRET}
  - name: mail
    format: email
    smtp: {addr: "127.0.0.1:25", from: a@example.com, to: [b@example.com]}
`
	for _, tc := range []struct {
		name, file string
		want       string
	}{
		{"no console_url", people, "webhooks chat, mail get decision requests without a link to the console"},
		{"console_url set", "console_url: https://pollwarden.example.com\n" + people, ""},
		{"signed JSON only", "webhooks:\n  - {name: ci, url: https://ci.example.com/hook, secret: env:HOOK_SECRET}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := webhook.Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got := unlinkedReceivers(cfg)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("warning %q, want %q", got, tc.want)
			}
			if got != "" && !strings.Contains(got, "set console_url") {
				t.Errorf("the warning does not say what to do: %q", got)
			}
		})
	}
}
