package prober

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestConditionalRequestETag: If-None-Match carries the ETag given, only
// under status.conditional: etag, and an ETag echoing the secret comes back
// redacted and cut, since it is kept on the record.
func TestConditionalRequestETag(t *testing.T) {
	var sent []string
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		sent = append(sent, r.Header.Get("If-None-Match"))
		w.Header().Set("ETag", `"`+r.Header.Get("Authorization")+strings.Repeat("x", 1000)+`"`)
		w.WriteHeader(http.StatusNotModified)
	})
	c := testContract(base)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary})
	ctx := WithIfNoneMatch(context.Background(), `"v1"`)
	p.Status(ctx, c, base+"/j")
	c.Status.Conditional = "etag"
	resp := p.Status(ctx, c, base+"/j")
	if len(sent) != 2 || sent[0] != "" || sent[1] != `"v1"` {
		t.Fatalf("If-None-Match sent %q, want none then \"v1\"", sent)
	}
	if resp.Status != http.StatusNotModified {
		t.Fatalf("status %d", resp.Status)
	}
	if strings.Contains(resp.ETag, "sk-canary") || !strings.Contains(resp.ETag, Redacted) || len(resp.ETag) > maxRequestIDLen+64 {
		t.Fatalf("ETag kept as %q", resp.ETag)
	}
}
