package webhook

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFormats(t *testing.T) {
	c, err := Parse([]byte(`console_url: https://pollwarden.example/
webhooks:
  - name: signed
    url: https://hooks.example/pollwarden
    secret: env:WH
  - name: chat
    format: slack
    url: env:SLACK_WEBHOOK_URL
  - name: mail
    format: email
    events: [escalated, expiry]
    smtp:
      addr: smtp.example.com:587
      from: pollwarden@example.com
      to: [oncall@example.com]
      username: pollwarden
      password: file:/run/secrets/smtp
      require_tls: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.ConsoleURL != "https://pollwarden.example" {
		t.Fatalf("console_url %q, want it without the trailing slash", c.ConsoleURL)
	}
	std, chat, mail := c.Endpoints[0], c.Endpoints[1], c.Endpoints[2]
	if std.Format != FormatStandard || !slices.Equal(std.Events, []string{ClassEscalated, ClassFinal, ClassReminder, ClassExpiry, ClassIncident}) {
		t.Fatalf("signed endpoint %+v: every event by default", std)
	}
	if chat.Format != FormatSlack || chat.URL != "env:SLACK_WEBHOOK_URL" || chat.Wants(ClassFinal) || !chat.Wants(ClassReminder) || !chat.Wants(ClassIncident) {
		t.Fatalf("slack endpoint %+v: escalations, reminders, expiries and incidents only", chat)
	}
	s := mail.SMTP
	if mail.Format != FormatEmail || s == nil || s.Addr != "smtp.example.com:587" || s.Password != "file:/run/secrets/smtp" ||
		!s.RequireTLS || !slices.Equal(mail.Events, []string{ClassEscalated, ClassExpiry}) {
		t.Fatalf("email endpoint %+v %+v", mail, s)
	}
}

func TestParseFormatProblems(t *testing.T) {
	_, err := Parse([]byte(`console_url: https://pw.example/?x=1
webhooks:
  - name: chat
    format: slack
    url: https://hooks.slack.com/services/T0/B0/canary-literal-token
    events: [final]
  - name: mail
    format: email
    secret: env:X
    smtp:
      addr: smtp.example.com
      from: not an address
      to: []
      username: pw
      password: canary-plain-password
  - name: nomail
    format: email
  - name: odd
    format: teams
    url: https://h.example
    secret: env:S
`))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"line 1: console_url: must not carry a query or fragment",
		"line 5: webhooks[0].url: a Slack incoming-webhook URL carries its token: give it as env:NAME or file:PATH",
		`line 6: webhooks[0].events: "final": want escalated, reminder, expiry or incident`,
		"line 9: webhooks[1].secret: not used by format email",
		`line 11: webhooks[1].smtp.addr: "smtp.example.com": want host:port`,
		`line 12: webhooks[1].smtp.from: "not an address" is not an e-mail address`,
		"line 13: webhooks[1].smtp.to: must be a non-empty list of e-mail addresses",
		"line 15: webhooks[1].smtp.password: must be a reference, env:NAME or file:PATH",
		"webhooks[2].smtp: missing: an e-mail endpoint needs its relay",
		"line 19: webhooks[3].format: want standard-webhooks, slack or email",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	for _, canary := range []string{"canary-literal-token", "canary-plain-password"} {
		if strings.Contains(msg, canary) {
			t.Fatalf("the error echoes a secret %s:\n%s", canary, msg)
		}
	}
}
