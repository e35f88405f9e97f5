// Package mailsink is an SMTP server on loopback for tests (built on
// github.com/emersion/go-smtp): it accepts mail, optionally behind
// STARTTLS and AUTH PLAIN, and keeps every message it was given.
package mailsink

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is one message as the server received it.
type Mail struct {
	From string
	To   []string
	Data []byte
	// User is the name the client authenticated as ("" without AUTH).
	User string
	// TLS is true when the message came over STARTTLS.
	TLS bool
}

// Options configures a Sink.
type Options struct {
	// TLS, when set, makes the server offer STARTTLS with this config.
	TLS *tls.Config
	// User and Password, when set, require AUTH PLAIN with them.
	User, Password string
}

// Sink is a running server.
type Sink struct {
	Addr string
	opts Options
	mu   sync.Mutex
	mail []Mail
}

// Start serves on a loopback port until the test ends.
func Start(t testing.TB, opts Options) *Sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sink{Addr: ln.Addr().String(), opts: opts}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{sink: s, conn: c}, nil
	}))
	srv.Domain = "mailsink.test"
	srv.TLSConfig = opts.TLS
	srv.AllowInsecureAuth = opts.TLS == nil
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

// Mail returns the messages received so far.
func (s *Sink) Mail() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mail...)
}

type session struct {
	sink *Sink
	conn *smtp.Conn
	cur  Mail
}

func (s *session) AuthMechanisms() []string {
	if s.sink.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.sink.opts.User || pass != s.sink.opts.Password {
			return errors.New("invalid credentials")
		}
		s.cur.User = user
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.sink.opts.User != "" && s.cur.User == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.From = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := s.cur
	m.Data = b
	_, m.TLS = s.conn.TLSConnectionState()
	s.sink.mu.Lock()
	s.sink.mail = append(s.sink.mail, m)
	s.sink.mu.Unlock()
	return nil
}

func (s *session) Reset() { s.cur = Mail{User: s.cur.User} }

func (s *session) Logout() error { return nil }
