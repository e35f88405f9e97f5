package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The event classes an endpoint may subscribe to.
const (
	ClassEscalated = "escalated" // every escalation (an operation may escalate more than once)
	ClassFinal     = "final"     // the one final outcome: succeeded, failed, cancelled or expired
	ClassReminder  = "reminder"  // a reminder of an escalation nobody has decided
	ClassExpiry    = "expiry"    // a decision request that expired, and the default applied
)

// Endpoint is one receiver from the webhooks file.
type Endpoint struct {
	Name string
	URL  string
	// Secret is a reference (env:NAME or file:PATH) to a Standard Webhooks
	// signing secret, resolved at every send; the secret itself is never
	// held here, stored or logged.
	Secret string
	// Events are the classes sent to this endpoint (default: all those
	// its format carries).
	Events []string
	// Format is how messages are written: FormatStandard (signed JSON,
	// the default), FormatSlack or FormatEmail (notify.go).
	Format string
	// SMTP is the mail relay of a FormatEmail endpoint.
	SMTP *SMTP
}

// Wants reports whether the endpoint subscribes to class.
func (e Endpoint) Wants(class string) bool {
	for _, c := range e.Events {
		if c == class {
			return true
		}
	}
	return false
}

// Retry bounds the attempts of one message (docs/webhooks.md): the delay
// after failed attempt n is uniform in [50%, 100%] of min(Max, Base·2^(n-1)),
// at least the receiver's Retry-After, and the message is dead after
// Attempts attempts.
type Retry struct {
	Base, Max time.Duration
	Attempts  int
}

// Config is a parsed webhooks file.
type Config struct {
	Endpoints []Endpoint
	Retry     Retry
	// Timeout bounds one attempt (connect, send, answer).
	Timeout time.Duration
	// ConsoleURL is the base of the web console's links in Slack and
	// e-mail messages ({ConsoleURL}/ui/operations/{id}); empty: no link.
	ConsoleURL string
}

// The defaults: about 6 to 11 hours of retries before a message is dead.
const (
	DefaultBase     = 5 * time.Second
	DefaultMax      = time.Hour
	DefaultAttempts = 20
	DefaultTimeout  = 10 * time.Second
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Load reads and checks a webhooks file; the error lists every problem with
// its line, and names the file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhooks file: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse checks a webhooks file's bytes. Unknown keys are errors; a secret
// must be a reference, and a value that is not one is never echoed, since
// a user may have pasted the secret itself.
func Parse(data []byte) (*Config, error) {
	p := &parser{}
	c := &Config{Retry: Retry{Base: DefaultBase, Max: DefaultMax, Attempts: DefaultAttempts}, Timeout: DefaultTimeout}
	root := p.document(data)
	if root != nil {
		p.config(root, c)
	}
	if len(p.problems) > 0 {
		sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].line < p.problems[j].line })
		lines := make([]string, len(p.problems))
		for i, pr := range p.problems {
			lines[i] = pr.msg
		}
		return nil, errors.New(strings.Join(lines, "\n"))
	}
	return c, nil
}

// parser collects every problem of a file, reported in line order.
type parser struct{ problems []problem }

type problem struct {
	line int
	msg  string
}

func (p *parser) add(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, problem{line, fmt.Sprintf("line %d: %s: %s", line, path, fmt.Sprintf(format, args...))})
}

func (p *parser) document(data []byte) *yaml.Node {
	var doc yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
	switch {
	case errors.Is(err, io.EOF) || (err == nil && (len(doc.Content) == 0 || doc.Content[0].Tag == "!!null")):
		p.problems = append(p.problems, problem{1, "line 1: empty file: expected a mapping with a webhooks list"})
		return nil
	case err != nil:
		p.problems = append(p.problems, problem{0, "YAML: " + err.Error()})
		return nil
	}
	return doc.Content[0]
}

// fields walks a mapping, reporting keys not in allowed.
func (p *parser) fields(n *yaml.Node, path string, allowed ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		p.add(n, path, "must be a mapping")
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		known := false
		for _, a := range allowed {
			known = known || k.Value == a
		}
		switch {
		case !known:
			p.add(k, join(path, k.Value), "unknown key (allowed: %s)", strings.Join(allowed, ", "))
		case out[k.Value] != nil:
			p.add(k, join(path, k.Value), "given twice")
		default:
			out[k.Value] = v
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (p *parser) config(root *yaml.Node, c *Config) {
	f := p.fields(root, "", "webhooks", "retry", "timeout", "console_url")
	if f == nil {
		return
	}
	list := f["webhooks"]
	switch {
	case list == nil:
		p.add(root, "webhooks", "missing: list at least one endpoint")
	case list.Kind != yaml.SequenceNode || len(list.Content) == 0:
		p.add(list, "webhooks", "must be a non-empty list of endpoints")
	default:
		seen := map[string]bool{}
		for i, n := range list.Content {
			e := p.endpoint(n, fmt.Sprintf("webhooks[%d]", i))
			if e.Name != "" && seen[e.Name] {
				p.add(n, fmt.Sprintf("webhooks[%d].name", i), "%q is used twice", e.Name)
			}
			seen[e.Name] = true
			c.Endpoints = append(c.Endpoints, e)
		}
	}
	if n := f["console_url"]; n != nil {
		c.ConsoleURL = p.consoleURL(n)
	}
	if n := f["timeout"]; n != nil {
		c.Timeout = p.duration(n, "timeout")
	}
	if n := f["retry"]; n != nil {
		r := p.fields(n, "retry", "base", "max", "attempts")
		if v := r["base"]; v != nil {
			c.Retry.Base = p.duration(v, "retry.base")
		}
		if v := r["max"]; v != nil {
			c.Retry.Max = p.duration(v, "retry.max")
		}
		if v := r["attempts"]; v != nil {
			a, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || a < 1 || a > 1000 {
				p.add(v, "retry.attempts", "must be a whole number from 1 to 1000")
			}
			c.Retry.Attempts = a
		}
		if c.Retry.Base > 0 && c.Retry.Max > 0 && c.Retry.Base > c.Retry.Max {
			p.add(n, "retry", "base (%v) is longer than max (%v)", c.Retry.Base, c.Retry.Max)
		}
	}
}

func (p *parser) duration(n *yaml.Node, path string) time.Duration {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || d <= 0 {
		p.add(n, path, "must be a positive Go duration such as 500ms, 10s or 1h")
		return 0
	}
	return d
}

func (p *parser) endpoint(n *yaml.Node, path string) Endpoint {
	e := Endpoint{Format: FormatStandard}
	f := p.fields(n, path, "name", "format", "url", "secret", "events", "smtp")
	if f == nil {
		return e
	}
	scalar := func(key string) (string, *yaml.Node) {
		v := f[key]
		if v == nil {
			p.add(n, join(path, key), "missing")
			return "", nil
		}
		if v.Kind != yaml.ScalarNode {
			p.add(v, join(path, key), "must be a string")
			return "", nil
		}
		return v.Value, v
	}
	if name, v := scalar("name"); v != nil && !nameRE.MatchString(name) {
		p.add(v, join(path, "name"), "%q: use lower-case letters, digits and dashes", name)
	} else {
		e.Name = name
	}
	if v := f["format"]; v != nil {
		e.Format = p.format(v, join(path, "format"))
	}
	p.target(n, f, path, scalar, &e)
	classes := formatClasses(e.Format)
	e.Events = classes
	if v := f["events"]; v != nil {
		e.Events = nil
		want := strings.Join(classes[:len(classes)-1], ", ") + " or " + classes[len(classes)-1]
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.add(v, join(path, "events"), "must be a non-empty list of %s", want)
			return e
		}
		for _, c := range v.Content {
			if !slices.Contains(classes, c.Value) {
				p.add(c, join(path, "events"), "%q: want %s", c.Value, want)
				continue
			}
			e.Events = append(e.Events, c.Value)
		}
	}
	return e
}

// checkURL accepts an absolute http or https URL without credentials
// (they would be stored in no place we control: put them in the secret).
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must be an absolute http:// or https:// URL")
	case u.Host == "":
		return errors.New("has no host")
	case u.User != nil:
		return errors.New("must not carry a user or password")
	}
	return nil
}

// checkRef accepts env:NAME and file:PATH, the syntax of contract
// credentials; anything else is refused without being echoed.
func checkRef(ref string) error {
	kind, name, _ := strings.Cut(ref, ":")
	if (kind != "env" && kind != "file") || name == "" {
		return errors.New("must be a reference, env:NAME or file:PATH (the value is not shown: it may be the secret itself)")
	}
	return nil
}
