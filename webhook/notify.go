package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// render writes the message of event e for an endpoint whose format is
// not the signed JSON: the decision request, as Block Kit or as an e-mail.
func (d *Dispatcher) render(ctx context.Context, ep Endpoint, e event, ev pollwarden.Event, op *pollwarden.Operation) ([]byte, error) {
	r := newRequest(e, ev, d.eventData(ctx, ev), op, d.cfg.ConsoleURL)
	if ep.Format == FormatEmail {
		return emailBody(r, ep.SMTP, messageID(ev), ev.At)
	}
	return slackBody(r)
}

// eventData is the facts of ev: from its payload, or, in a sealed store,
// from the store's decoded copy (a serve that holds the key reads it); a
// store that cannot decode it leaves the request to the record's facts.
func (d *Dispatcher) eventData(ctx context.Context, ev pollwarden.Event) pollwarden.EventData {
	if data, ok := payloadData(ev); ok {
		return data
	}
	evs, err := d.store.EventList(ctx, ev.OperationID)
	if err != nil {
		return pollwarden.EventData{}
	}
	for _, x := range evs {
		if x.Pos == ev.Pos {
			return x.Data
		}
	}
	return pollwarden.EventData{}
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

// CheckSecrets resolves every secret reference of an endpoint once, so
// that a daemon refuses to start on one it cannot use: the signing key
// (which must be a Standard Webhooks key), the Slack URL (which must be an
// http(s) URL) or the SMTP password. Errors name the reference, never a
// value.
func CheckSecrets(e Endpoint, resolve func(ref string) (string, error)) error {
	switch e.Format {
	case FormatSlack:
		u, err := resolve(e.URL)
		if err != nil {
			return fmt.Errorf("incoming-webhook URL: %w", err)
		}
		if checkURL(strings.TrimSpace(u)) != nil {
			return fmt.Errorf("incoming-webhook URL %s is not an absolute http(s) URL without user:password (the value is not shown)", e.URL)
		}
	case FormatEmail:
		if e.SMTP.Password != "" {
			if _, err := resolve(e.SMTP.Password); err != nil {
				return fmt.Errorf("smtp password: %w", err)
			}
		}
	default:
		s, err := resolve(e.Secret)
		if err != nil {
			return err
		}
		if _, err := ParseSecret(s); err != nil {
			return fmt.Errorf("signing secret %s %w", e.Secret, err)
		}
	}
	return nil
}
