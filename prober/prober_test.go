package prober

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

const token = "tok-123"

func TestStatusSendsCredentialFromEnv(t *testing.T) {
	rc, base := serve(t, "api.test", nil)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})
	resp := p.Status(context.Background(), testContract(base), base+"/v1/jobs/exp_1")

	if resp.CredentialError != nil || resp.Transport != "" || resp.Status != 200 {
		t.Fatalf("resp = %+v", resp)
	}
	if !resp.Sent || !resp.SentAt.Equal(fixedNow) || !resp.ReceivedAt.Equal(fixedNow) {
		t.Errorf("times/sent = %v %v %v", resp.Sent, resp.SentAt, resp.ReceivedAt)
	}
	if string(resp.rawBody()) != `{"state":"running"}` {
		t.Errorf("body = %q", resp.rawBody())
	}
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests", len(reqs))
	}
	r := reqs[0]
	if got := r.Header.Get("Authorization"); got != "Bearer "+token {
		t.Errorf("Authorization = %q", got)
	}
	if r.Method != http.MethodGet || r.URL.Path != "/v1/jobs/exp_1" || r.Header.Get("Accept") != "application/json" {
		t.Errorf("request = %s %s accept=%q", r.Method, r.URL.Path, r.Header.Get("Accept"))
	}
	if r.Header.Get("User-Agent") != "pollwarden" {
		t.Errorf("User-Agent = %q", r.Header.Get("User-Agent"))
	}
}

func TestStatusSendsBareCredentialFromFile(t *testing.T) {
	rc, base := serve(t, "api.test", nil)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testContract(base)
	c.Status.Credential = &pollwarden.Credential{Header: "X-Api-Key", Ref: "file:" + path}
	resp := newTestProber(nil).Status(context.Background(), c, base+"/j")
	if resp.Status != 200 {
		t.Fatalf("resp = %+v", resp)
	}
	if got := rc.requests()[0].Header.Get("X-Api-Key"); got != token {
		t.Errorf("X-Api-Key = %q, want the file content without its newline", got)
	}
}

func TestContractHeaderCannotReplaceCredential(t *testing.T) {
	rc, base := serve(t, "api.test", nil)
	c := testContract(base)
	c.Status.Headers["authorization"] = "Bearer other"
	newTestProber(map[string]string{"EXPORT_API_TOKEN": token}).Status(context.Background(), c, base)
	if got := rc.requests()[0].Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+token {
		t.Errorf("Authorization = %q", got)
	}
}

func TestCredentialErrorsNameTheReferenceOnly(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	cases := []struct {
		name, ref, secret, want string
		is                      error
	}{
		{"env unset", "env:EXPORT_API_TOKEN", "", "credential env:EXPORT_API_TOKEN is not set", nil},
		{"env empty", "env:EMPTY", "", "credential env:EMPTY is empty", nil},
		{"file unreadable", "file:" + missing, "", "credential file:" + missing + " cannot be read", fs.ErrNotExist},
		{"secret pasted as ref", "sk-canary-pasted", "", "neither env:NAME nor file:PATH", nil},
		{"line break in secret", "env:BROKEN", "sk-canary-broken\nX: y", "credential env:BROKEN holds a control character", nil},
	}
	env := map[string]string{"EMPTY": "", "BROKEN": "sk-canary-broken\nX: y"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc, base := serve(t, "api.test", nil)
			c := testContract(base)
			c.Status.Credential.Ref = tc.ref
			resp := newTestProber(env).Status(context.Background(), c, base)
			err := resp.CredentialError
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CredentialError = %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
			if strings.Contains(err.Error(), "sk-canary") {
				t.Errorf("error leaks a secret: %v", err)
			}
			if resp.Sent || len(rc.requests()) != 0 {
				t.Errorf("a request was sent despite the credential error")
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 10+len(r.URL.Query().Get("extra")))))
	})
	c := testContract(base)
	c.Status.MaxBodyBytes = 10
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})

	at := p.Status(context.Background(), c, base+"/")
	if at.BodyTooLarge || len(at.rawBody()) != 10 {
		t.Errorf("at the cap: tooLarge=%v len=%d", at.BodyTooLarge, len(at.rawBody()))
	}
	over := p.Status(context.Background(), c, base+"/?extra=1")
	if !over.BodyTooLarge || over.rawBody() != nil || over.Status != 200 || over.Transport != "" {
		t.Errorf("over the cap: %+v", over)
	}
}

func TestHeadersCaptured(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
		h.Set("X-Request-Id", "req-generic")
		h.Set("X-Trace", "req-contract")
		h.Set("Location", "/v1/jobs/exp_1")
		if r.URL.Path == "/amzn" {
			h.Del("X-Request-Id")
			h.Set("x-amzn-requestid", "req-amzn")
		}
		if r.URL.Path == "/long" {
			h.Set("X-Request-Id", strings.Repeat("a", 1000))
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})
	c := testContract(base)

	r := p.Status(context.Background(), c, base+"/")
	if r.Status != 503 || r.RetryAfter != "Wed, 21 Oct 2015 07:28:00 GMT" || r.RequestID != "req-generic" || r.Location != "/v1/jobs/exp_1" {
		t.Errorf("resp = %+v", r)
	}
	if r = p.Status(context.Background(), c, base+"/amzn"); r.RequestID != "req-amzn" {
		t.Errorf("amzn request id = %q", r.RequestID)
	}
	if r = p.Status(context.Background(), c, base+"/long"); r.RequestID != strings.Repeat("a", maxRequestIDLen)+cutMark(1000-maxRequestIDLen) {
		t.Errorf("long request id kept %d bytes", len(r.RequestID))
	}
	c.Status.RequestIDHeader = "X-Trace"
	if r = p.Status(context.Background(), c, base+"/"); r.RequestID != "req-contract" {
		t.Errorf("contract request id header ignored: %q", r.RequestID)
	}
}

func TestActionUsesItsMethodAndTheCredential(t *testing.T) {
	rc, base := serve(t, "api.test", nil)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})
	resp := p.Action(context.Background(), testContract(base), &pollwarden.Action{Method: http.MethodPost}, base+"/v1/jobs/exp_1/cancel", nil, nil)
	if resp.Status != 200 {
		t.Fatalf("resp = %+v", resp)
	}
	r := rc.requests()[0]
	if r.Method != http.MethodPost || r.URL.Path != "/v1/jobs/exp_1/cancel" || r.Header.Get("Authorization") != "Bearer "+token {
		t.Errorf("request = %s %s auth=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	}
}

func TestNoCredential(t *testing.T) {
	rc, base := serve(t, "api.test", nil)
	c := testContract(base)
	c.Status.Credential = nil
	if resp := newTestProber(nil).Status(context.Background(), c, base); resp.Status != 200 {
		t.Fatalf("resp = %+v", resp)
	}
	if h := rc.requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q", h)
	}
}

func TestNewRequiresNow(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without Now did not panic")
		}
	}()
	New(Options{})
}
