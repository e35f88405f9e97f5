package prober

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func redirectTo(target string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-redirect")
		http.Redirect(w, r, target, code)
	}
}

func TestRedirectToDisallowedHostIsRefused(t *testing.T) {
	b, baseB := serve(t, "evil.test", nil)
	a, baseA := serve(t, "api.test", redirectTo(baseB+"/steal", http.StatusFound))
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})
	resp := p.Status(context.Background(), testContract(baseA), baseA+"/j")

	if resp.Transport != pollwarden.TransportRedirect || !strings.Contains(resp.TransportDetail, "evil.test") {
		t.Errorf("transport = %q %q", resp.Transport, resp.TransportDetail)
	}
	if resp.Status != http.StatusFound || resp.RequestID != "req-redirect" || !resp.Sent {
		t.Errorf("resp = %+v", resp)
	}
	if n := len(a.requests()); n != 1 {
		t.Errorf("first server got %d requests", n)
	}
	if n := len(b.requests()); n != 0 {
		t.Errorf("disallowed host received %d requests (credential may have leaked)", n)
	}
}

func TestAllowedRedirectIsFollowedWithCredential(t *testing.T) {
	b, baseB := serve(t, "files.test", nil)
	_, baseA := serve(t, "api.test", redirectTo(baseB+"/moved", http.StatusTemporaryRedirect))
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})
	resp := p.Status(context.Background(), testContract(strings.ToUpper(baseA), baseB), baseA+"/j")

	if resp.Status != 200 || resp.Transport != "" || string(resp.rawBody()) != `{"state":"running"}` {
		t.Fatalf("resp = %+v", resp)
	}
	reqs := b.requests()
	if len(reqs) != 1 || reqs[0].URL.Path != "/moved" || reqs[0].Header.Get("Authorization") != "Bearer "+token {
		t.Errorf("second server saw %d requests", len(reqs))
	}
}

func TestInitialHostMustBeAllowed(t *testing.T) {
	rc, base := serve(t, "other.test", nil)
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": token}).Status(context.Background(), testContract("http://api.test:"+portOf(base)), base)
	if resp.Transport != pollwarden.TransportRedirect || !strings.Contains(resp.TransportDetail, "other.test") || resp.Sent {
		t.Errorf("resp = %+v", resp)
	}
	if len(rc.requests()) != 0 {
		t.Error("a request reached a host outside allowed_hosts")
	}
}

func TestEmptyAllowedHostsFallsBackToContractURL(t *testing.T) {
	_, base := serve(t, "api.test", nil)
	c := testContract()
	c.Status.URL = base + "/v1/jobs/{job_id}"
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})
	if resp := p.Status(context.Background(), c, base); resp.Status != 200 {
		t.Errorf("contract url host not allowed by default: %+v", resp)
	}
	c.Status.URL = ""
	if resp := p.Status(context.Background(), c, base); resp.Transport != pollwarden.TransportRedirect {
		t.Errorf("no hosts at all should allow nothing: %+v", resp)
	}
}

func TestTooManyRedirects(t *testing.T) {
	var loop *recorder
	loop, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/again", http.StatusFound)
	})
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": token}).Status(context.Background(), testContract(base), base)
	if resp.Transport != pollwarden.TransportRedirect || !strings.Contains(resp.TransportDetail, "more than 5") {
		t.Errorf("resp = %+v", resp)
	}
	if n := len(loop.requests()); n != MaxRedirects+1 {
		t.Errorf("server got %d requests, want %d", n, MaxRedirects+1)
	}
}

func TestRedirectDowngradeRefused(t *testing.T) {
	plain, basePlain := serve(t, "api.test", nil)
	port := basePlain[strings.LastIndex(basePlain, ":"):]
	tlsSrv := httptest.NewTLSServer(redirectTo("http://127.0.0.1"+port+"/", http.StatusFound))
	defer tlsSrv.Close()
	p := New(Options{
		Transport: tlsSrv.Client().Transport,
		Getenv:    func(string) (string, bool) { return token, true },
		Now:       func() time.Time { return fixedNow },
	})
	resp := p.Status(context.Background(), testContract(tlsSrv.URL, "http://127.0.0.1"+port), tlsSrv.URL)
	if resp.Transport != pollwarden.TransportRedirect || !strings.Contains(resp.TransportDetail, "downgrade") {
		t.Errorf("resp = %+v", resp)
	}
	if len(plain.requests()) != 0 {
		t.Error("credential sent over plain http after a downgrade")
	}
}

func TestRedirectMethod(t *testing.T) {
	cases := []struct {
		code         int
		method, want string
	}{
		{302, "POST", "GET"}, {303, "POST", "GET"}, {307, "POST", "POST"}, {308, "DELETE", "DELETE"}, {301, "GET", "GET"},
	}
	for _, tc := range cases {
		if got := redirectMethod(tc.code, tc.method); got != tc.want {
			t.Errorf("redirectMethod(%d, %s) = %s, want %s", tc.code, tc.method, got, tc.want)
		}
	}
}

// TestRedirectToAnotherPortOrSchemeIsRefused: a provider cannot move the
// credential to another port of an allowed host, nor to plain http there.
func TestRedirectToAnotherPortOrSchemeIsRefused(t *testing.T) {
	other, baseOther := serve(t, "api.test", nil)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		_, base := serve(t, "api.test", redirectTo(baseOther+"/steal", code))
		resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": token}).Status(context.Background(), testContract(base), base+"/j")
		if resp.Transport != pollwarden.TransportRedirect || !strings.Contains(resp.TransportDetail, "not an allowed origin") {
			t.Errorf("%d to another port: resp = %+v", code, resp)
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other port received %d requests (credential leaked)", n)
	}
}

func portOf(base string) string { return base[strings.LastIndex(base, ":")+1:] }
