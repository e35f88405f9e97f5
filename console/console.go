// Package console is the approver's web console served by `pollwarden
// serve` at /ui/: a person signs in with their token, sees the escalations
// waiting for a decision first and decides them with a note, without a
// terminal. Pages are server-rendered (html/template, embedded in the
// binary); a little JavaScript only refreshes them on server-sent events,
// so every decision works with JavaScript disabled.
package console

import (
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// Path is where serve mounts the console.
const Path = "/ui/"

//go:embed templates/*.html static/*
var files embed.FS

// Verifier finds who presents a token; *tokens.Set is one, so the
// console and the JSON API accept exactly the same tokens.
type Verifier interface {
	Identify(token string) (tokens.Caller, bool)
}

// Options configures the console. Ops and Tokens are required. Who sees
// which operation is the tokens' rule, applied by the use cases (package
// operations) as at every other door.
type Options struct {
	// Ops is the process's one application: every read, decision, audit
	// check and change signal goes through it; its clock tells ages and
	// session expiry, and its Recheck paces a live page's re-reads.
	Ops    *operations.Service
	Tokens Verifier
	// Logger receives internal errors; default slog.Default().
	Logger *slog.Logger
	// SessionTTL is how long a sign-in lasts; default 8 hours.
	SessionTTL time.Duration
	// SecureCookies marks every cookie Secure even on a plain connection:
	// set when people reach the console over https (serve --public-url
	// https://…) through a TLS proxy.
	SecureCookies bool
}

// Console is the console's http.Handler. It is safe for concurrent use.
type Console struct {
	// ops reads and decides, so who sees what is the rule every door
	// shares; the console only translates forms and pages.
	ops      *operations.Service
	tokens   Verifier
	now      func() time.Time
	log      *slog.Logger
	recheck  time.Duration
	secure   bool
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux

	closeOnce sync.Once
	done      chan struct{}
}

// New returns the console. It panics when a required option is missing,
// a wiring mistake rather than a condition to serve around.
func New(opts Options) *Console {
	if opts.Ops == nil || opts.Tokens == nil {
		panic("console.New: Ops and Tokens are required")
	}
	c := &Console{ops: opts.Ops, tokens: opts.Tokens, now: opts.Ops.Clock().Now, log: opts.Logger,
		recheck: opts.Ops.Recheck(), secure: opts.SecureCookies, done: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	ttl := opts.SessionTTL
	if ttl <= 0 {
		ttl = 8 * time.Hour
	}
	c.sessions = newSessions(ttl, c.now)
	c.pages = parsePages()
	c.routes()
	return c
}

func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /ui/{$}", c.queue)
	m.HandleFunc("POST /ui/signin", c.signIn)
	m.HandleFunc("POST /ui/signout", c.signOut)
	m.HandleFunc("GET /ui/operations/{id}", c.operation)
	m.HandleFunc("POST /ui/operations/{id}/decide", c.decide)
	m.HandleFunc("GET /ui/quotas", c.quotas)
	m.HandleFunc("GET /ui/incidents", c.incidents)
	m.HandleFunc("GET /ui/incidents/{id}", c.incident)
	m.HandleFunc("POST /ui/incidents/{id}/decide", c.decideIncident)
	m.HandleFunc("GET /ui/audit", c.auditHead)
	m.HandleFunc("POST /ui/audit/verify", c.verifyAudit)
	m.HandleFunc("GET /ui/events", c.queueEvents)
	m.HandleFunc("GET /ui/operations/{id}/events", c.operationEvents)
	m.HandleFunc("GET /ui/static/{file}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache") // a new binary's files are seen at once
		http.ServeFileFS(w, r, files, "static/"+r.PathValue("file"))
	})
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no page "+r.URL.Path+".")
	})
	c.mux = m
}

// ServeHTTP sets the headers every answer carries, then routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Only our own scripts, styles and forms: a string that slipped past
	// escaping still could not run or post elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	c.mux.ServeHTTP(w, r)
}

// Close ends the live-update streams, so that a server's Shutdown (which
// waits for open requests) is not held up by them.
func (c *Console) Close() {
	c.closeOnce.Do(func() { close(c.done) })
}

// RedirectRoot sends a person who opens the daemon's root to the console.
func RedirectRoot(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Path, http.StatusSeeOther)
}
