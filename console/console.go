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

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
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

// Changes signals changes of records; *changes.Feed is one (the
// controller's OnChange fanned out).
type Changes interface {
	Subscribe(id string) (<-chan struct{}, func())
	SubscribeAll() (<-chan struct{}, func())
}

// Options configures the console. Controller, Store, Contracts and Tokens
// are required. Who sees which operation is the tokens' rule, applied by
// the use cases (package operations) as at every other door.
type Options struct {
	Controller *controller.Controller
	Store      pollwarden.Store
	Contracts  *contract.Set
	Tokens     Verifier
	// Changes drives live updates; without it (nil) open pages see
	// changes only on their periodic re-read.
	Changes Changes
	// Now is the clock for ages and session expiry; default time.Now.
	Now func() time.Time
	// Logger receives internal errors; default slog.Default().
	Logger *slog.Logger
	// SessionTTL is how long a sign-in lasts; default 8 hours.
	SessionTTL time.Duration
	// Recheck is how often a live page re-reads the store, to see changes
	// made by other processes; default 3 s.
	Recheck time.Duration
	// SecureCookies marks every cookie Secure even on a plain connection:
	// set when people reach the console over https (serve --public-url
	// https://…) through a TLS proxy.
	SecureCookies bool
}

// Console is the console's http.Handler. It is safe for concurrent use.
type Console struct {
	ctl *controller.Controller
	// ops reads and decides, so who sees what is the rule every door
	// shares; the console only translates forms and pages.
	ops       *operations.Service
	store     pollwarden.Store
	contracts *contract.Set
	tokens    Verifier
	changes   Changes
	now       func() time.Time
	log       *slog.Logger
	recheck   time.Duration
	secure    bool
	sessions  *sessions
	pages     map[string]*template.Template
	mux       *http.ServeMux

	closeOnce sync.Once
	done      chan struct{}
}

// New returns the console. It panics when a required option is missing,
// a wiring mistake rather than a condition to serve around.
func New(opts Options) *Console {
	if opts.Controller == nil || opts.Store == nil || opts.Contracts == nil || opts.Tokens == nil {
		panic("console.New: Controller, Store, Contracts and Tokens are required")
	}
	c := &Console{ctl: opts.Controller, store: opts.Store, contracts: opts.Contracts, tokens: opts.Tokens,
		changes: opts.Changes, now: opts.Now, log: opts.Logger, recheck: opts.Recheck,
		secure: opts.SecureCookies, done: make(chan struct{})}
	c.ops = operations.New(operations.Options{Controller: opts.Controller, Contracts: opts.Contracts})
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.recheck <= 0 {
		c.recheck = 3 * time.Second
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
