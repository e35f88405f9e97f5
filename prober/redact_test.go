package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// canary holds characters that JSON and URL escaping change, so the escaped
// echoes are exercised too.
const canary = "sk-canary-7f3a<9>&b+c/d=="

func TestProviderEchoOfSecretIsRedacted(t *testing.T) {
	var base string
	_, base = serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		h := w.Header()
		h.Set("X-Request-Id", "req-"+auth)
		h.Set("Retry-After", auth)
		h.Set("Location", base+"/next?token="+url.QueryEscape(strings.TrimPrefix(auth, "Bearer ")))
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		b, _ := json.Marshal(map[string]string{"error": "bad token", "you_sent": auth})
		_, _ = w.Write(append(b, []byte(" raw:"+auth+" path:"+url.PathEscape(auth))...))
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary})
	resp := p.Status(context.Background(), testContract(base), base+"/j")

	if resp.Status != http.StatusUnauthorized {
		t.Fatalf("resp = %+v", resp)
	}
	dump := fmt.Sprintf("%+v %s %s %s %s %s", resp, resp.Body, resp.RequestID, resp.RetryAfter, resp.Location, resp.TransportDetail)
	for _, leak := range []string{"sk-canary", "7f3a"} {
		if strings.Contains(dump, leak) {
			t.Fatalf("secret leaked: %s", dump)
		}
	}
	if !strings.Contains(string(resp.Body), `"you_sent":"Bearer [REDACTED]"`) {
		t.Errorf("body = %s", resp.Body)
	}
	if resp.RequestID != "req-Bearer [REDACTED]" || !strings.HasSuffix(resp.Location, "token=[REDACTED]") {
		t.Errorf("request id %q location %q", resp.RequestID, resp.Location)
	}
}

func TestRedactionInRefusedRedirectDetail(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		// A provider that puts the token in a hostname label is absurd,
		// but the detail is provider-controlled text all the same.
		w.Header().Set("Location", "http://"+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+".test/")
		w.WriteHeader(http.StatusFound)
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "sk-canary-hostlabel"})
	resp := p.Status(context.Background(), testContract(base), base)
	if strings.Contains(fmt.Sprintf("%+v", resp), "sk-canary") {
		t.Fatalf("secret leaked: %+v", resp)
	}
	if !strings.Contains(resp.TransportDetail, "[REDACTED]") {
		t.Errorf("detail = %q", resp.TransportDetail)
	}
}
