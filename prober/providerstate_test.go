package prober

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestProviderStateRedacted: the provider's own state text (state.raw),
// kept in the record next to the mapped state, loses the secret too.
func TestProviderStateRedacted(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"state":"running","note":"token ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `"}`))
	})
	c := testContract(base)
	c.State.Path, c.State.RawPath, c.State.Pending = "state", "note", []string{"running"}
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": token}).Status(context.Background(), c, base+"/v1/jobs/1")
	f := resp.Facts(extractor(t, c))
	if f.ProviderState != "token "+Redacted {
		t.Errorf("provider state %q, want the token redacted", f.ProviderState)
	}
}
