package prober

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// TestRateLimitHeadersOnlyThoseNamedAndRedacted: the prober hands back the
// headers the contract's rate_limit reads and no other, with an echoed
// secret removed.
func TestRateLimitHeadersOnlyThoseNamedAndRedacted(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1377013266 "+r.Header.Get("Authorization"))
		w.Header().Set("X-Other", "not copied")
		w.WriteHeader(http.StatusForbidden)
	})
	c := testContract(base)
	c.RateLimit = &pollwarden.RateLimitSpec{When: []pollwarden.RateLimitSignal{{Status: 403, Header: "x-ratelimit-remaining", Equals: "0", HasEquals: true}},
		ResetHeader: "X-RateLimit-Reset", ResetUnit: pollwarden.UnitUnixSeconds}
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary}).Status(context.Background(), c, base+"/j")
	if resp.Headers["x-ratelimit-remaining"] != "0" || len(resp.Headers) != 2 {
		t.Fatalf("headers %v", resp.Headers)
	}
	if dump := fmt.Sprint(resp.Headers); strings.Contains(dump, "sk-canary") || !strings.Contains(dump, Redacted) {
		t.Fatalf("echoed secret not redacted: %s", dump)
	}
}
