package prober

import (
	"context"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// TestWildcardOriginCarriesCredential: a wildcard allowed origin lets the
// credential reach a host one label under it, and no deeper.
func TestWildcardOriginCarriesCredential(t *testing.T) {
	rc, base := serve(t, "east.api.test", nil)
	port := base[strings.LastIndexByte(base, ':'):]
	c := testContract("http://east.api.test"+port, "http://*.api.test"+port)
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})

	if resp := p.Status(context.Background(), c, "http://west.api.test"+port+"/v1/jobs/1"); resp.Status != 200 {
		t.Fatalf("one label under the wildcard: %+v", resp)
	}
	if got := rc.requests()[0].Header.Get("Authorization"); got != "Bearer "+token {
		t.Errorf("sent %q", got)
	}
	resp := p.Status(context.Background(), c, "http://a.b.api.test"+port+"/v1/jobs/1")
	if resp.Transport != pollwarden.TransportRedirect || resp.Sent || len(rc.requests()) != 1 {
		t.Errorf("two labels under the wildcard: %+v", resp)
	}
}
