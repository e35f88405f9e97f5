package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestServeRefusesEncodedDotSegments: an agent (real serve) registers job
// ids that climb out of a {+job_id} status path through percent-encoded
// dot segments. Each is refused with 422 naming the path, and the
// provider receives no request at all, so the credential never reaches
// /admin.
func TestServeRefusesEncodedDotSegments(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"state":"running"}`)
	}))
	defer provider.Close()
	c := fmt.Sprintf(`version: 1
name: plus-path
status:
  url: "%s/v1/jobs/{+job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
state: {path: state, pending: [running], success: [done], failure: [failed]}
limits: {deadline: 60s, max_status_requests: 10}
`, provider.URL)
	_, _, base := serveContracts(t, []string{"PROC_TOKEN=" + canary}, map[string]string{"plus.yaml": c})

	for _, job := range []string{"%2e%2e/%2e%2e/admin", ".%2e/.%2e/admin", "a/%2E%2E/%2E%2E/%2E%2E/admin", "a/..%2f..%2f..%2fadmin"} {
		body := fmt.Sprintf(`{"contract":"plus-path","job_id":%q}`, job)
		got := call(t, base, "agent-token", "POST", "/v1/operations", body, 422)
		if msg := fmt.Sprint(got["error"]); !strings.Contains(msg, "path") {
			t.Errorf("job %q refused without naming the path: %s", job, msg)
		}
	}
	// A job id with an encoded character that is not a dot segment is
	// still taken, and its poll stays under /v1/jobs/.
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"fine","contract":"plus-path","job_id":"p/q%41"}`, 201)
	waitFor(t, "the allowed job's poll", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(paths) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		dec, _ := url.PathUnescape(p)
		if !strings.HasPrefix(p, "/v1/jobs/") || strings.Contains(dec, "..") {
			t.Errorf("the provider received %s", p)
		}
	}
}
