package webhook

import (
	"strings"
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(`webhooks:
  - name: ops-channel
    url: https://hooks.example/pollwarden
    secret: env:POLLWARDEN_WEBHOOK_SECRET
  - name: final-only
    url: http://127.0.0.1:9000/x
    secret: file:/run/secrets/wh
    events: [final]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints) != 2 || c.Retry != (Retry{DefaultBase, DefaultMax, DefaultAttempts}) || c.Timeout != DefaultTimeout {
		t.Fatalf("config %+v", c)
	}
	a, b := c.Endpoints[0], c.Endpoints[1]
	if !a.Wants(ClassEscalated) || !a.Wants(ClassFinal) || b.Wants(ClassEscalated) || !b.Wants(ClassFinal) ||
		a.Secret != "env:POLLWARDEN_WEBHOOK_SECRET" || b.URL != "http://127.0.0.1:9000/x" {
		t.Fatalf("endpoints %+v", c.Endpoints)
	}
	c, err = Parse([]byte("webhooks: [{name: a, url: 'https://h.example', secret: 'env:S'}]\nretry: {base: 1s, max: 1m, attempts: 3}\ntimeout: 2s\n"))
	if err != nil || c.Retry != (Retry{time.Second, time.Minute, 3}) || c.Timeout != 2*time.Second {
		t.Fatalf("retry and timeout: %+v, %v", c, err)
	}
}

func TestParseProblemsNamedWithLines(t *testing.T) {
	_, err := Parse([]byte(`webhooks:
  - name: ops
    url: ftp://hooks.example/x
    secret: whsec_c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1ub3QtbGVhaw==
    colour: red
  - name: ops
    url: https://user:pw@hooks.example/
    events: [started]
retry: {base: 1h, max: 1m, attempts: 0}
extra: 1
`))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"line 3: webhooks[0].url: must be an absolute http:// or https:// URL",
		"line 4: webhooks[0].secret: must be a reference, env:NAME or file:PATH",
		"line 5: webhooks[0].colour: unknown key",
		"line 6: webhooks[1].name: \"ops\" is used twice",
		"line 6: webhooks[1].secret: missing",
		"line 7: webhooks[1].url: must not carry a user or password",
		"line 8: webhooks[1].events: \"started\": want escalated, final, reminder, expiry or incident",
		"line 9: retry.attempts: must be a whole number from 1 to 1000",
		"line 9: retry: base (1h0m0s) is longer than max (1m0s)",
		"line 10: extra: unknown key",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "c2VjcmV0") {
		t.Errorf("the error echoes a pasted secret:\n%s", msg)
	}
	for _, empty := range []string{"", "webhooks: []\n"} {
		if _, err := Parse([]byte(empty)); err == nil {
			t.Errorf("%q accepted", empty)
		}
	}
}

// FuzzParse: no input panics, and an accepted file only holds usable
// endpoints.
func FuzzParse(f *testing.F) {
	f.Add([]byte("webhooks:\n  - {name: a, url: 'https://h.example/x', secret: 'env:S', events: [final]}\nretry: {base: 1s, max: 2s, attempts: 3}\n"))
	f.Add([]byte("webhooks: &a [*a]\n"))
	f.Add([]byte("webhooks:\n  - name: [x]\n    url: {a: b}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if len(c.Endpoints) == 0 || c.Timeout <= 0 || c.Retry.Base <= 0 || c.Retry.Base > c.Retry.Max || c.Retry.Attempts < 1 {
			t.Fatalf("accepted %q as %+v", data, c)
		}
		for _, e := range c.Endpoints {
			if !nameRE.MatchString(e.Name) || checkURL(e.URL) != nil || checkRef(e.Secret) != nil || len(e.Events) == 0 {
				t.Fatalf("accepted endpoint %+v from %q", e, data)
			}
		}
	})
}
