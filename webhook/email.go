package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"net/textproto"
	"os"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// emailBody writes a decision request as a plain-text e-mail (RFC 5322,
// quoted-printable UTF-8). Built once at enqueue: every attempt sends the
// same bytes under the same Message-ID, so mail clients fold a repeat.
func emailBody(r request, s *SMTP, id string, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", s.From)
	h("To", strings.Join(s.To, ", "))
	// The title holds escaped values only; Q-encoding keeps it one line.
	h("Subject", mime.QEncoding.Encode("utf-8", r.Title))
	h("Date", at.UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+id+"@pollwarden>")
	h("Auto-Submitted", "auto-generated")
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	var t strings.Builder
	fmt.Fprintf(&t, "%s\n\n%s\n\n", r.Title, r.Headline)
	for _, f := range r.Facts {
		fmt.Fprintf(&t, "%-17s %s\n", f.Name+":", f.Value)
	}
	if len(r.Options) > 0 {
		t.WriteString("\nOptions:\n")
		for i, o := range r.Options {
			fmt.Fprintf(&t, "  %d. %s [%s]\n     Cost: %s\n     New limit: %s\n     Answer: %s\n", i+1, o.Label, o.ID, o.Cost, o.NewLimit, o.Answer)
		}
	}
	if r.Console != "" {
		fmt.Fprintf(&t, "\nOpen in the console: %s\n", r.Console)
	}
	w := quotedprintable.NewWriter(&b)
	if _, err := w.Write([]byte(strings.ReplaceAll(t.String(), "\n", "\r\n"))); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sendMail delivers one e-mail through the endpoint's relay: STARTTLS
// whenever the server offers it (refused without it when require_tls is
// set), AUTH PLAIN with the password resolved now, which net/smtp sends
// only over TLS or to a loopback relay. The answer's SMTP code is the
// attempt's status.
func (d *Dispatcher) sendMail(ctx context.Context, ep Endpoint, m pollwarden.OutboxMessage) (int, error) {
	s := ep.SMTP
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	host, _, _ := net.SplitHostPort(s.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return code(err), err
	}
	defer c.Close()
	if err := c.Hello("pollwarden"); err != nil {
		return code(err), err
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		if s.CAFile != "" {
			pem, err := os.ReadFile(s.CAFile)
			if err != nil {
				return 0, fmt.Errorf("smtp.ca_file: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return 0, errors.New("smtp.ca_file holds no PEM certificate")
			}
		}
		if err := c.StartTLS(cfg); err != nil {
			return code(err), fmt.Errorf("STARTTLS: %w", err)
		}
	} else if s.RequireTLS {
		return 0, errNoTLS
	}
	if s.Username != "" {
		pw, err := d.resolve(s.Password)
		if err != nil {
			return 0, fmt.Errorf("smtp password: %w", err)
		}
		if err := c.Auth(smtp.PlainAuth("", s.Username, pw, host)); err != nil {
			return code(err), fmt.Errorf("AUTH: %w", err)
		}
	}
	if err := c.Mail(s.From); err != nil {
		return code(err), err
	}
	for _, to := range s.To {
		if err := c.Rcpt(to); err != nil {
			return code(err), err
		}
	}
	w, err := c.Data()
	if err != nil {
		return code(err), err
	}
	if _, err := w.Write(m.Body); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return code(err), err
	}
	_ = c.Quit()
	return 250, nil
}

// code is the SMTP reply code of an error, 0 when there is none.
func code(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// errNoTLS is an attempt refused because the relay offers no STARTTLS
// and the endpoint requires it.
var errNoTLS = errors.New("the SMTP server offers no STARTTLS and require_tls is set")
