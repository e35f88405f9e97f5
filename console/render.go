package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/pollwarden/pollwarden/operations"
)

// parsePages builds one template per page, each with the shared layout.
func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{"clock": clock, "maxNote": func() int { return operations.MaxNote }}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html"))
	pages := map[string]*template.Template{}
	for _, name := range []string{"signin", "queue", "operation", "error", "audit", "quotas", "incidents", "incident"} {
		t := template.Must(template.Must(base.Clone()).ParseFS(files, "templates/"+name+".html", "templates/timeline.html"))
		pages[name] = t
	}
	return pages
}

// render executes a page into a buffer first, so a template error is a
// clean 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var b bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&b, "layout.html", data); err != nil {
		c.log.ErrorContext(r.Context(), "console page failed", "page", page, "error", err)
		http.Error(w, "the console could not render this page; see the daemon's log", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail answers a page that says what went wrong and what to do.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v, _ := c.who(r)
	c.render(w, r, status, "error", map[string]any{"Viewer": v, "Status": status, "Title": http.StatusText(status), "Message": msg})
}

// internal logs err and answers 500 without its detail.
func (c *Console) internal(w http.ResponseWriter, r *http.Request, err error) {
	c.log.ErrorContext(r.Context(), "console request failed", "path", r.URL.Path, "error", err)
	c.fail(w, r, http.StatusInternalServerError, "The store could not be read; see the daemon's log.")
}

// clean makes a provider's or agent's string safe to show as text:
// html/template escapes markup, and this shows control characters (a
// terminal escape, a NUL) as visible \xNN instead of passing them on.
func clean(s string) string {
	if strings.IndexFunc(s, isHidden) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isHidden(r) {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isHidden(r rune) bool {
	return (unicode.IsControl(r) && r != '\n' && r != '\t') || r == '\u2028' || r == '\u2029' ||
		unicode.Is(unicode.Bidi_Control, r)
}

// clock shows a time in UTC, to the second.
func clock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// age shows a duration the way a person reads a queue: 42s, 3m12s, 2h05m.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
