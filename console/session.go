package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// The cookies. The session cookie holds only a random id; the pre-session
// cookie only the sign-in form's CSRF token.
const (
	sessionCookie = "pollwarden_session"
	signinCookie  = "pollwarden_signin"
)

// session is one sign-in. The token stays in the daemon's memory, never in
// the cookie, so every request re-verifies it: a token revoked by a
// reloaded tokens file ends its sessions at once, and a changed role
// applies at once.
type session struct {
	token   string
	csrf    string
	expires time.Time
}

// sessions are kept in memory: a restart signs everyone out, which costs a
// person one paste of their token and keeps no session secret on disk.
type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	ttl time.Duration
	now func() time.Time
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{m: map[string]*session{}, ttl: ttl, now: now}
}

// randomID returns 32 random bytes, base64url: unguessable ids and CSRF
// tokens.
func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) create(token string) (id string, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m { // sweep: sessions are few, sign-ins rare
		if !now.Before(v.expires) {
			delete(s.m, k)
		}
	}
	id = randomID()
	sess = &session{token: token, csrf: randomID(), expires: now.Add(s.ttl)}
	s.m[id] = sess
	return id, sess
}

func (s *sessions) get(id string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[id]
	if !ok {
		return nil, false
	}
	if !s.now().Before(sess.expires) {
		delete(s.m, id)
		return nil, false
	}
	return sess, true
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// viewer is who looks at a page: the actor, their session's CSRF token,
// and whether they may decide.
type viewer struct {
	Actor pollwarden.Actor
	// Caller is the token's entry: what it may see (tokens.Caller.Sees).
	Caller tokens.Caller
	CSRF   string
	Decide bool
	id     string
}

// who returns the signed-in viewer of r, if any.
func (c *Console) who(r *http.Request) (viewer, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return viewer{}, false
	}
	sess, ok := c.sessions.get(ck.Value)
	if !ok {
		return viewer{}, false
	}
	caller, ok := c.tokens.Identify(sess.token)
	if !ok {
		c.sessions.drop(ck.Value)
		return viewer{}, false
	}
	// The buttons are drawn from the table every use case asks.
	may := operations.Caller{Caller: caller}.May(operations.ActionDecide, nil, "") == nil
	return viewer{Actor: caller.Actor, Caller: caller, CSRF: sess.csrf, Decide: may, id: ck.Value}, true
}

// cookie builds a console cookie: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure behind TLS: on
// a TLS connection, or always when people reach the daemon over https
// through a proxy (Options.SecureCookies), where the daemon itself sees
// plain http and a cookie without Secure could leak over http.
func (c *Console) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Path, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.secure}
}

// sameToken compares CSRF tokens in constant time; an empty one never
// matches.
func sameToken(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// maxForm bounds a posted form: a token, an option, a note.
const maxForm = 16 << 10

// parseForm reads a posted form within maxForm.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	return r.ParseForm() == nil
}

// signinPage shows the sign-in form with a fresh pre-session CSRF token.
func (c *Console) signinPage(w http.ResponseWriter, r *http.Request, status int, problem string) {
	csrf := randomID()
	http.SetCookie(w, c.cookie(r, signinCookie, csrf, 600))
	next := ""
	if r.Method == http.MethodGet && r.URL.Path != Path {
		next = r.URL.RequestURI()
	}
	c.render(w, r, status, "signin", map[string]any{"CSRF": csrf, "Problem": problem, "Next": next})
}

// returnTo is where a sign-in continues: the console page the person
// opened (a notification's link), never another site.
func returnTo(next string) string {
	if strings.HasPrefix(next, Path) && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return Path
}

// signIn checks the form's CSRF token against the pre-session cookie (so
// another site cannot sign a browser in as someone else), then the token.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if !parseForm(w, r) {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	ck, err := r.Cookie(signinCookie)
	if err != nil || !sameToken(ck.Value, r.PostFormValue("csrf")) {
		c.fail(w, r, http.StatusForbidden, "The sign-in form was not sent from this console (missing or stale CSRF token). Reload the page and sign in again.")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if _, ok := c.tokens.Identify(token); !ok {
		c.signinPage(w, r, http.StatusUnauthorized, "Unknown token.")
		return
	}
	id, sess := c.sessions.create(token)
	http.SetCookie(w, c.cookie(r, sessionCookie, id, int(sess.expires.Sub(c.now()).Seconds())))
	http.SetCookie(w, c.cookie(r, signinCookie, "", -1))
	http.Redirect(w, r, returnTo(r.PostFormValue("next")), http.StatusSeeOther)
}

// signOut ends the session.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	v, ok := c.postBy(w, r)
	if !ok {
		return
	}
	c.sessions.drop(v.id)
	http.SetCookie(w, c.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// postBy authenticates a post and checks its CSRF token: no session is
// 401, a missing or wrong token 403. It has answered when ok is false.
func (c *Console) postBy(w http.ResponseWriter, r *http.Request) (v viewer, ok bool) {
	if !parseForm(w, r) {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return v, false
	}
	v, ok = c.who(r)
	if !ok {
		c.fail(w, r, http.StatusUnauthorized, "You are not signed in (or your session ended). Sign in and try again.")
		return v, false
	}
	if !sameToken(v.CSRF, r.PostFormValue("csrf")) {
		c.fail(w, r, http.StatusForbidden, "This form was not sent from this console (missing or wrong CSRF token); nothing was changed.")
		return v, false
	}
	return v, true
}
