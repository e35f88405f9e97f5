package prober

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestMintedTokenLifetimeIsCapped: an endpoint claiming expires_in
// 2147483647 (68 years) gets its token kept an hour at most.
func TestMintedTokenLifetimeIsCapped(t *testing.T) {
	var minted atomic.Int32
	tokenURL, _ := tokenEndpoint(t, &minted, 2147483647)
	_, base := serve(t, "api.test", echoProvider)
	clk := &clock{t: time.Now()}
	p := New(Options{Transport: testTransport(), Now: clk.now, Getenv: oauthEnv})
	c := oauthContract(base, tokenURL)
	p.Status(context.Background(), c, base+"/v1/jobs/1")
	clk.add(tokenMaxTTL - tokenMargin - time.Second)
	p.Status(context.Background(), c, base+"/v1/jobs/1")
	if n := minted.Load(); n != 1 {
		t.Fatalf("minted %d within the first hour, want 1", n)
	}
	clk.add(2 * time.Second)
	p.Status(context.Background(), c, base+"/v1/jobs/1")
	if n := minted.Load(); n != 2 {
		t.Fatalf("minted %d after an hour of a token claiming 68 years, want 2", n)
	}
}

// TestRefusedTokenIsForgotten: a 401 from the provider drops the cached
// token, so the next request (status, submit or fetch) mints afresh; any
// other answer keeps it.
func TestRefusedTokenIsForgotten(t *testing.T) {
	var minted atomic.Int32
	tokenURL, _ := tokenEndpoint(t, &minted, 3600)
	var status atomic.Int32
	status.Store(200)
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(`{"state":"running"}`))
	})
	p := New(Options{Transport: testTransport(), Now: time.Now, Getenv: oauthEnv})
	c := oauthContract(base, tokenURL)
	for i, st := range []int32{200, 403, 500, 401, 200, 200} {
		status.Store(st)
		resp := p.Status(context.Background(), c, base+"/v1/jobs/1")
		if resp.Status != int(st) {
			t.Fatalf("call %d: %+v", i, resp)
		}
	}
	if n := minted.Load(); n != 2 {
		t.Fatalf("minted %d, want 2: one at first, one after the 401 only", n)
	}
}

func oauthEnv(k string) (string, bool) {
	v, ok := map[string]string{"CLIENT_ID": "app-1", "CLIENT_SECRET": clientSecretCanary}[k]
	return v, ok
}
