package webhook

import (
	"context"
	"time"

	"github.com/pollwarden/pollwarden"
)

// render writes the message of event e for an endpoint whose format is
// not the signed JSON: the decision request, as Block Kit or as an e-mail.
func (d *Dispatcher) render(ep Endpoint, e event, ev pollwarden.Event, op *pollwarden.Operation) ([]byte, error) {
	r := newRequest(e, ev, op, d.cfg.ConsoleURL)
	if ep.Format == FormatEmail {
		return emailBody(r, ep.SMTP, messageID(ev), ev.At)
	}
	return slackBody(r)
}

// send makes one attempt in the endpoint's format; it returns the
// answer's status (an HTTP or SMTP code), the receiver's Retry-After and
// the failure, if any.
func (d *Dispatcher) send(ctx context.Context, ep Endpoint, m pollwarden.OutboxMessage, at time.Time) (int, time.Duration, error) {
	switch ep.Format {
	case FormatSlack:
		return d.postSlack(ctx, ep, m)
	case FormatEmail:
		status, err := d.sendMail(ctx, ep, m)
		return status, 0, err
	}
	return d.post(ctx, ep, m, at)
}
