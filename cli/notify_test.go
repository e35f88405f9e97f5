package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// An e-mail's stored body is the message, not JSON: `webhooks list
// --json` shows it as a string, and its status as an SMTP code.
func TestOutboxViewOfAnEmail(t *testing.T) {
	m := pollwarden.OutboxMessage{Seq: 1, Endpoint: "mail", Status: pollwarden.OutboxDelivered, Attempts: 1, LastStatus: 250,
		Body: []byte("From: pw@example.com\r\nSubject: Decision needed\r\n\r\nbody\r\n")}
	b, err := json.Marshal(outboxViews([]pollwarden.OutboxMessage{m}))
	if err != nil {
		t.Fatalf("webhooks list --json fails on an e-mail: %v", err)
	}
	if !strings.Contains(string(b), `"body":"From: pw@example.com\r\nSubject: Decision needed`) {
		t.Fatalf("view %s", b)
	}
	if got := lastAttempt(m); got != "SMTP 250" {
		t.Fatalf("last attempt %q, want SMTP 250", got)
	}
	m.Body = []byte(`{"type":"operation.escalated"}`)
	if b, _ := json.Marshal(outboxViews([]pollwarden.OutboxMessage{m})); !strings.Contains(string(b), `"body":{"type":"operation.escalated"}`) || lastAttempt(m) != "HTTP 250" {
		t.Fatalf("a JSON body changed: %s, %s", b, lastAttempt(m))
	}
}
