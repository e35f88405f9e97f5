package webhook

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/mailsink"
	"github.com/pollwarden/pollwarden/sqlite"
)

// Canaries: the Slack URL's token and the relay's password must never
// appear in a message, a stored body or an error.
const (
	slackToken = "canary-slack-token-5d1f"
	smtpCanary = "canary-smtp-password-9b2e"
)

// slackHook is a local incoming-webhook receiver that keeps each POST.
type slackHook struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	posts [][]byte
}

func newSlackHook(t *testing.T) *slackHook {
	h := &slackHook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.paths, h.posts = append(h.paths, r.URL.Path), append(h.posts, b)
		h.mu.Unlock()
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(400)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *slackHook) got() ([]string, [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...), append([][]byte(nil), h.posts...)
}

type notifyRig struct {
	*fixture
	d     *Dispatcher
	std   *receiver
	slack *slackHook
	sink  *mailsink.Sink
}

func newNotifyRig(t *testing.T, smtp *SMTP, sinkOpts mailsink.Options) *notifyRig {
	t.Helper()
	return newNotifyRigOn(t, openSQLite(t, sqlite.Options{}), smtp, sinkOpts)
}

func newNotifyRigOn(t *testing.T, st store, smtp *SMTP, sinkOpts mailsink.Options) *notifyRig {
	t.Helper()
	r := &notifyRig{std: newReceiver(t, nil), slack: newSlackHook(t), sink: mailsink.Start(t, sinkOpts)}
	r.fixture = newFixtureOn(t, st, r.std.URL, fast)
	smtp.Addr = r.sink.Addr
	r.cfg.ConsoleURL = "https://pollwarden.example"
	r.cfg.Endpoints = []Endpoint{
		{Name: "signed", Format: FormatStandard, URL: r.std.URL, Secret: "env:WH", Events: formatClasses(FormatStandard)},
		{Name: "slack", Format: FormatSlack, URL: "env:SLACK_URL", Events: formatClasses(FormatSlack)},
		{Name: "mail", Format: FormatEmail, SMTP: smtp, Events: formatClasses(FormatEmail)},
	}
	secrets := map[string]string{"env:WH": testSecret, "env:SLACK_URL": r.slack.URL + "/services/T0/B0/" + slackToken, "env:SMTP_PW": smtpCanary}
	var err error
	r.d, err = New(Options{Store: r.st, Outbox: r.st, Config: r.cfg, Owner: "n", Clock: r.clk, Rand: rand.New(rand.NewPCG(1, 2)),
		Resolve: func(ref string) (string, error) {
			if s, ok := secrets[ref]; ok {
				return s, nil
			}
			return "", errors.New("credential " + ref + " is not set")
		}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// escalate stores op escalated on its budget with an extend and an
// abandon option, a provider state that tries Slack markup, and the event.
func (r *notifyRig) escalate(t *testing.T, op *pollwarden.Operation) {
	t.Helper()
	now := r.clk.Now()
	dl := now.Add(15 * time.Minute)
	opts := []pollwarden.Option{
		{ID: pollwarden.OptionExtend, Label: "Extend waiting once by 15 minutes with 4 more status requests", ExtraTime: "15m",
			ExtraStatusRequests: 4, NewDeadline: &dl, NewMaxStatusRequests: 8, GrantsAuthority: true},
		{ID: pollwarden.OptionAbandon, Label: "Stop waiting and close the operation as failed; nothing more is sent"},
	}
	op.Phase, op.Reason = pollwarden.PhaseEscalated, pollwarden.ReasonRequestBudgetExhausted
	op.StatusRequestsUsed, op.LastState, op.LastHTTP, op.LastHTTPAt = 4, "<!channel> <https://evil.example|x>", 200, &now
	op.Escalation = &pollwarden.Escalation{Reason: op.Reason, Message: "…", Options: opts, At: now}
	err := r.st.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: now, Events: []pollwarden.Event{{At: now,
		Kind: pollwarden.EventEscalated, Data: pollwarden.EventData{Reason: op.Reason, Elapsed: "40m0s", Options: opts}}}})
	if err != nil {
		t.Fatal(err)
	}
}

func (r *notifyRig) event(t *testing.T, op *pollwarden.Operation, k pollwarden.EventKind, text string) {
	t.Helper()
	err := r.st.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: r.clk.Now(), Events: []pollwarden.Event{{At: r.clk.Now(),
		Kind: k, Data: pollwarden.EventData{Reason: op.Reason, Decision: text, Options: op.Escalation.Options}}}})
	if err != nil {
		t.Fatal(err)
	}
}

func noCanary(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, c := range []string{slackToken, smtpCanary} {
		if bytes.Contains(b, []byte(c)) {
			t.Fatalf("%s carries the canary %s", where, c)
		}
	}
}

// slackText flattens every text of a Block Kit message, block by block.
func slackTexts(t *testing.T, body []byte) (types []string, texts []string, buttons []string) {
	t.Helper()
	var m struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type   string     `json:"type"`
			Text   *slackText `json:"text"`
			Fields []slackText
			Elems  []struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("Slack body is not JSON: %v\n%s", err, body)
	}
	for _, b := range m.Blocks {
		types = append(types, b.Type)
		if b.Text != nil {
			texts = append(texts, b.Text.Text)
		}
		for _, f := range b.Fields {
			texts = append(texts, f.Text)
		}
		for _, e := range b.Elems {
			if e.Type == "button" {
				buttons = append(buttons, e.URL)
			}
		}
	}
	return types, texts, buttons
}

func mailText(t *testing.T, m mailsink.Mail) (*mail.Message, string) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatalf("not an e-mail: %v\n%s", err, m.Data)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	return msg, string(body)
}

func TestEscalationReachesSlackAndEmailWithTheDecisionRequest(t *testing.T) {
	r := newNotifyRig(t, &SMTP{From: "pollwarden@example.com", To: []string{"oncall@example.com", "lead@example.com"},
		Username: "pollwarden", Password: "env:SMTP_PW"}, mailsink.Options{User: "pollwarden", Password: smtpCanary})
	op := r.create(t, "op-1")
	if err := r.d.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.escalate(t, op)
	if n := r.tick(t, r.d); n != 3 {
		t.Fatalf("%d attempts, want one per endpoint", n)
	}
	for _, m := range r.outbox(t, "") {
		noCanary(t, "stored body for "+m.Endpoint, m.Body)
		if m.Status != pollwarden.OutboxDelivered {
			t.Fatalf("%s: %s, %s", m.Endpoint, m.Status, m.LastError)
		}
	}

	paths, posts := r.slack.got()
	if len(posts) != 1 || paths[0] != "/services/T0/B0/"+slackToken {
		t.Fatalf("Slack receiver got %d posts at %v", len(posts), paths)
	}
	noCanary(t, "Slack message", posts[0])
	types, texts, buttons := slackTexts(t, posts[0])
	if types[0] != "header" || !strings.Contains(texts[0], "Decision needed: op-1 (request_budget_exhausted)") {
		t.Fatalf("first block %s %q, want the header", types[0], texts[0])
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"*Operation*\nop-1", "*Contract*\nc", "*Provider job*\njob-op-1", "*Elapsed*\n40m0s", "*Status requests*\n4 of 4",
		"*Last HTTP result*\n200 at 03:04:05 UTC", "*Reason*\nrequest_budget_exhausted",
		"*Extend waiting once by 15 minutes with 4 more status requests* (`extend`)",
		"Cost: 15m more, 4 more status requests", "New limit: deadline 2030-01-02 03:19:05 UTC, budget 8 status requests",
		"Answer: `pollwarden decide op-1 extend (or in the console: https://pollwarden.example/ui/operations/op-1)`",
		"Answer: `pollwarden decide op-1 abandon", "Cost: nothing more is sent",
		"&lt;!channel&gt; &lt;https://evil.example|x&gt;",
	} {
		if !strings.Contains(all, want) {
			t.Fatalf("Slack message lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(string(posts[0]), "<!channel>") || strings.Contains(string(posts[0]), "<https://evil") {
		t.Fatal("the provider's state reached Slack as markup")
	}
	if len(buttons) != 1 || buttons[0] != "https://pollwarden.example/ui/operations/op-1" {
		t.Fatalf("buttons %v, want the console page", buttons)
	}

	got := r.sink.Mail()
	if len(got) != 1 {
		t.Fatalf("%d e-mails, want 1", len(got))
	}
	m := got[0]
	if m.From != "pollwarden@example.com" || strings.Join(m.To, ",") != "oncall@example.com,lead@example.com" || m.User != "pollwarden" {
		t.Fatalf("envelope %q → %v as %q", m.From, m.To, m.User)
	}
	noCanary(t, "e-mail", m.Data)
	msg, body := mailText(t, m)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != "Decision needed: op-1 (request_budget_exhausted)" {
		t.Fatalf("subject %q (%v)", subject, err)
	}
	if msg.Header.Get("To") != "oncall@example.com, lead@example.com" || !strings.HasPrefix(msg.Header.Get("Message-ID"), "<pw_") ||
		msg.Header.Get("Auto-Submitted") != "auto-generated" {
		t.Fatalf("headers %v", msg.Header)
	}
	for _, want := range []string{
		"Operation:        op-1", "Provider job:     job-op-1", "Status requests:  4 of 4", "Last HTTP result: 200 at 03:04:05 UTC",
		"Reason:           request_budget_exhausted", "1. Extend waiting once by 15 minutes with 4 more status requests [extend]",
		"Cost: 15m more, 4 more status requests", "New limit: deadline 2030-01-02 03:19:05 UTC, budget 8 status requests",
		"Answer: pollwarden decide op-1 abandon (or in the console: https://pollwarden.example/ui/operations/op-1)",
		"Open in the console: https://pollwarden.example/ui/operations/op-1",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("e-mail body lacks %q:\n%s", want, body)
		}
	}

	// A reminder and an expiry reach all three; the final outcome only
	// the signed JSON.
	r.clk.Add(time.Hour)
	r.event(t, op, pollwarden.EventDecisionReminder, "reminder 1: decision request waiting for 1h")
	r.tick(t, r.d)
	r.clk.Add(time.Hour)
	r.event(t, op, pollwarden.EventDecisionExpired, "decision request expired after 2h; default applied: abandon")
	op.Phase = pollwarden.PhaseFailed
	r.event(t, op, pollwarden.EventDecision, "abandoned: closed as failed")
	r.tick(t, r.d)
	_, posts = r.slack.got()
	if len(posts) != 3 || len(r.sink.Mail()) != 3 || len(r.std.got()) != 4 {
		t.Fatalf("Slack %d, e-mail %d, signed %d; want 3, 3 and 4 (the final outcome only signed)", len(posts), len(r.sink.Mail()), len(r.std.got()))
	}
	_, texts, _ = slackTexts(t, posts[1])
	if !strings.HasPrefix(texts[0], "Reminder: decision still needed: op-1") || !strings.Contains(strings.Join(texts, "\n"), "Answer: `pollwarden decide op-1 extend") {
		t.Fatalf("reminder %q", texts)
	}
	_, texts, _ = slackTexts(t, posts[2])
	if texts[0] != "Decision request expired: op-1 (request_budget_exhausted)" ||
		!strings.Contains(texts[1], "Decision request expired after 2h; default applied: abandon. Nobody decided in time") ||
		strings.Contains(strings.Join(texts, "\n"), "Answer:") {
		t.Fatalf("expiry %q", texts)
	}
	_, body = mailText(t, r.sink.Mail()[2])
	if !strings.Contains(body, "Decision request expired after 2h; default applied: abandon") {
		t.Fatalf("expiry e-mail:\n%s", body)
	}
}

// selfSigned borrows httptest's certificate (valid for 127.0.0.1) and
// writes its CA to a file, as an operator's ca_file.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	s := httptest.NewUnstartedServer(nil)
	s.StartTLS()
	t.Cleanup(s.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: s.TLS.Certificates}, ca
}

func TestEmailUsesStartTLSWhenOffered(t *testing.T) {
	cfg, ca := selfSigned(t)
	r := newNotifyRig(t, &SMTP{From: "pw@example.com", To: []string{"a@example.com"}, Username: "pw", Password: "env:SMTP_PW",
		RequireTLS: true, CAFile: ca}, mailsink.Options{TLS: cfg, User: "pw", Password: smtpCanary})
	op := r.create(t, "op-1")
	if err := r.d.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.escalate(t, op)
	r.tick(t, r.d)
	got := r.sink.Mail()
	if len(got) != 1 || !got[0].TLS || got[0].User != "pw" {
		t.Fatalf("mail %+v, want one, over STARTTLS, authenticated", got)
	}
}

func TestEmailRequireTLSRefusesAPlainRelay(t *testing.T) {
	r := newNotifyRig(t, &SMTP{From: "pw@example.com", To: []string{"a@example.com"}, RequireTLS: true}, mailsink.Options{})
	op := r.create(t, "op-1")
	if err := r.d.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.escalate(t, op)
	r.tick(t, r.d)
	if len(r.sink.Mail()) != 0 {
		t.Fatal("sent over a relay without STARTTLS although require_tls is set")
	}
	for _, m := range r.outbox(t, pollwarden.OutboxPending) {
		if m.Endpoint == "mail" && !strings.Contains(m.LastError, "offers no STARTTLS") {
			t.Fatalf("last error %q", m.LastError)
		}
	}
}

// In a sealed store the raw scan cannot read an event's payload: a serve
// holding the key reads the decoded event, so a reminder still says how
// long the request has waited, and the options are there.
func TestSealedStoreRemindersKeepTheirText(t *testing.T) {
	k, err := audit.NewSealKey(bytes.Repeat([]byte{7}, audit.SealKeySize))
	if err != nil {
		t.Fatal(err)
	}
	r := newNotifyRigOn(t, openSQLite(t, sqlite.Options{Sealer: k}), &SMTP{From: "pw@example.com", To: []string{"a@example.com"}}, mailsink.Options{})
	op := r.create(t, "op-1")
	if err := r.d.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.escalate(t, op)
	r.clk.Add(time.Hour)
	r.event(t, op, pollwarden.EventDecisionReminder, "reminder 1: decision request waiting for 1h")
	r.tick(t, r.d)
	_, posts := r.slack.got()
	if len(posts) != 2 {
		t.Fatalf("%d Slack posts, want 2", len(posts))
	}
	// The two messages may be delivered in either order.
	var all string
	for _, p := range posts {
		_, texts, _ := slackTexts(t, p)
		if m := strings.Join(texts, "\n"); strings.Contains(m, "Reminder 1") {
			all = m
		}
	}
	if !strings.Contains(all, "Reminder 1: decision request waiting for 1h.") || !strings.Contains(all, "pollwarden decide op-1 extend") {
		t.Fatalf("reminder from a sealed store:\n%s", all)
	}
}
