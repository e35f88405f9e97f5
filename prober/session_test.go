package prober

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// sessionContract is testContract with an MCP-style handshake at /mcp.
func sessionContract(base string) *pollwarden.ContractSpec {
	c := testContract(base)
	c.Status.Method, c.Status.Safe = http.MethodPost, true
	c.Status.Session = &pollwarden.SessionSpec{URL: base + "/mcp", Method: http.MethodPost,
		Body: `{"method":"initialize"}`, Notify: `{"method":"notifications/initialized"}`, Header: "Mcp-Session-Id"}
	return c
}

// sessionServer hands out session ids s1, s2, … to each initialize and
// answers 404 to a request whose id it has been told to forget.
type sessionServer struct {
	opened  atomic.Int32
	expired atomic.Value // the session id to answer 404 to
	status  func(w http.ResponseWriter, r *http.Request)
}

func (s *sessionServer) handle(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	switch {
	case strings.Contains(string(b), `"initialize"`):
		w.Header().Set("Mcp-Session-Id", "s"+string(rune('0'+s.opened.Add(1))))
		_, _ = w.Write([]byte(`{}`))
	case r.Header.Get("Mcp-Session-Id") == "":
		w.WriteHeader(http.StatusBadRequest)
	case s.expired.Load() == r.Header.Get("Mcp-Session-Id"):
		w.WriteHeader(http.StatusNotFound)
	case strings.Contains(string(b), "notifications/initialized"):
		w.WriteHeader(http.StatusAccepted)
	case s.status != nil:
		s.status(w, r)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"running","echo":"` + r.Header.Get("Mcp-Session-Id") + `"}`))
	}
}

func TestSessionOpenedOnceAndCarried(t *testing.T) {
	ss := &sessionServer{}
	rc, base := serve(t, "mcp.test", ss.handle)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "tok-1"})
	c := sessionContract(base)
	for i := range 2 {
		r := p.StatusWithBody(context.Background(), c, base+"/v1/jobs/j", []byte(`{}`))
		if r.Transport != "" || r.Status != 200 {
			t.Fatalf("call %d: %+v", i, r)
		}
		if raw := string(r.rawBody()); raw != `{"state":"running","echo":"s1"}` {
			t.Fatalf("call %d answer %s", i, raw)
		}
	}
	reqs := rc.requests()
	if len(reqs) != 4 || ss.opened.Load() != 1 {
		t.Fatalf("%d requests, %d sessions; want initialize, notify, two status calls on one session", len(reqs), ss.opened.Load())
	}
	for i, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			t.Errorf("request %d lacks the credential", i)
		}
		if i > 0 && r.Header.Get("Mcp-Session-Id") != "s1" {
			t.Errorf("request %d carries session %q, want s1", i, r.Header.Get("Mcp-Session-Id"))
		}
	}
}

// A 404 to the session id ends the session: that poll is a transport
// failure (nothing observed), and the next opens a new session.
func TestSessionEndedBy404(t *testing.T) {
	ss := &sessionServer{}
	_, base := serve(t, "mcp.test", ss.handle)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "tok-1"})
	c := sessionContract(base)
	p.StatusWithBody(context.Background(), c, base+"/v1/jobs/j", []byte(`{}`))
	ss.expired.Store("s1")
	r := p.StatusWithBody(context.Background(), c, base+"/v1/jobs/j", []byte(`{}`))
	if r.Transport != pollwarden.TransportOther || r.Status != 404 || !strings.Contains(r.TransportDetail, "ended the session") || r.rawBody() != nil {
		t.Fatalf("404 to the session: %+v, want a transport failure saying the session ended", r)
	}
	r = p.StatusWithBody(context.Background(), c, base+"/v1/jobs/j", []byte(`{}`))
	if r.Transport != "" || string(r.rawBody()) != `{"state":"running","echo":"s2"}` || ss.opened.Load() != 2 {
		t.Fatalf("after the 404: %+v (%s), %d sessions; want a new session s2", r, r.rawBody(), ss.opened.Load())
	}
}

// A refused handshake stands for the poll: 401 is the credential
// refused, and the status request is not sent.
func TestSessionRefused(t *testing.T) {
	var statusCalls atomic.Int32
	_, base := serve(t, "mcp.test", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), "initialize") {
			statusCalls.Add(1)
		}
		w.WriteHeader(http.StatusUnauthorized)
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "tok-1"})
	r := p.StatusWithBody(context.Background(), sessionContract(base), base+"/v1/jobs/j", []byte(`{}`))
	if !r.Sent || r.Status != 401 || r.Transport != "" || statusCalls.Load() != 0 {
		t.Fatalf("refused initialize: %+v, %d status calls; want status 401 and nothing else sent", r, statusCalls.Load())
	}
}

func TestSessionWithoutItsHeader(t *testing.T) {
	_, base := serve(t, "mcp.test", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "tok-1"})
	r := p.StatusWithBody(context.Background(), sessionContract(base), base+"/v1/jobs/j", []byte(`{}`))
	if r.Transport != pollwarden.TransportOther || !strings.Contains(r.TransportDetail, "no Mcp-Session-Id header") {
		t.Fatalf("handshake without a session id: %+v", r)
	}
}

// The session id is a bearer: a provider echoing it does not get it
// into what pollwarden keeps.
func TestSessionIDRedacted(t *testing.T) {
	ss := &sessionServer{}
	ss.status = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", r.Header.Get("Mcp-Session-Id")+"0")
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, base := serve(t, "mcp.test", ss.handle)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "tok-1"})
	r := p.StatusWithBody(context.Background(), sessionContract(base), base+"/v1/jobs/j", []byte(`{}`))
	if strings.Contains(r.RetryAfter, "s1") {
		t.Fatalf("the session id came back in Retry-After %q", r.RetryAfter)
	}
}

func TestEventStreamJSON(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"one response":              {"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		"a notification first":      {"data: {\"method\":\"notifications/progress\"}\n\nid: 2\ndata: {\"id\":1,\"error\":{\"code\":-32602}}\n\n", `{"id":1,"error":{"code":-32602}}`},
		"crlf, data over two lines": {": ping\r\ndata: {\"id\":1,\r\ndata: \"result\":1}\r\n\r\n", "{\"id\":1,\n\"result\":1}"},
		"no response: the last":     {"data: {\"method\":\"a\"}\n\ndata: {\"method\":\"b\"}\n", `{"method":"b"}`},
		"not a stream":              {"garbage", "garbage"},
	} {
		if got := string(eventStreamJSON([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}
