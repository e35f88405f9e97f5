package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// slackMessage is an incoming-webhook message: text is the fallback shown
// in notifications, blocks the Block Kit layout.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string         `json:"type"`
	Text     *slackText     `json:"text,omitempty"`
	Fields   []slackText    `json:"fields,omitempty"`
	Elements []slackElement `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackElement struct {
	Type  string     `json:"type"`
	Text  *slackText `json:"text,omitempty"`
	URL   string     `json:"url,omitempty"`
	Style string     `json:"style,omitempty"`
}

// slackEscape keeps a value from becoming a link, a mention or markup in
// mrkdwn: Slack asks for &, < and > to be escaped; a backtick would end
// a code span.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "'").Replace(s)
}

// clipRunes bounds a text to Slack's limits for its block.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// slackBody lays a decision request out as Block Kit: a header, the
// headline, the facts as fields, one section per option (its cost, new
// limit and how to answer it) and a button to the console page.
func slackBody(r request) ([]byte, error) {
	m := slackMessage{Text: clipRunes(r.Title, 3000)}
	m.Blocks = append(m.Blocks,
		slackBlock{Type: "header", Text: &slackText{"plain_text", clipRunes(r.Title, 150)}},
		slackBlock{Type: "section", Text: &slackText{"mrkdwn", clipRunes(slackEscape(r.Headline), 3000)}})
	var fields []slackText
	for _, f := range r.Facts {
		fields = append(fields, slackText{"mrkdwn", clipRunes("*"+f.Name+"*\n"+slackEscape(f.Value), 2000)})
	}
	m.Blocks = append(m.Blocks, slackBlock{Type: "section", Fields: fields[:min(len(fields), 10)]})
	if len(r.Options) > 0 {
		m.Blocks = append(m.Blocks, slackBlock{Type: "divider"})
	}
	for _, o := range r.Options {
		text := fmt.Sprintf("*%s* (`%s`)\nCost: %s\nNew limit: %s\nAnswer: `%s`", slackEscape(o.Label), o.ID,
			slackEscape(o.Cost), slackEscape(o.NewLimit), slackEscape(o.Answer))
		m.Blocks = append(m.Blocks, slackBlock{Type: "section", Text: &slackText{"mrkdwn", clipRunes(text, 3000)}})
	}
	if r.Console != "" {
		m.Blocks = append(m.Blocks, slackBlock{Type: "actions", Elements: []slackElement{{
			Type: "button", Text: &slackText{"plain_text", "Open in the console"}, URL: r.Console, Style: "primary"}}})
	}
	return json.Marshal(m)
}

// postSlack sends one message to a Slack-compatible incoming webhook. Its
// URL is a secret reference (the URL is the credential), resolved now and
// never logged; only the cause of a failure is kept.
func (d *Dispatcher) postSlack(ctx context.Context, ep Endpoint, m pollwarden.OutboxMessage) (int, time.Duration, error) {
	raw, err := d.resolve(ep.URL)
	if err != nil {
		return 0, 0, fmt.Errorf("incoming-webhook URL: %w", err)
	}
	raw = strings.TrimSpace(raw)
	if err := checkURL(raw); err != nil {
		return 0, 0, fmt.Errorf("incoming-webhook URL %s: %w", ep.URL, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(m.Body))
	if err != nil {
		return 0, 0, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pollwarden-webhooks")
	return d.answer(d.client.Do(req))
}
