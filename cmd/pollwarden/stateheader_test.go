package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWaitReadsStateFromHeadHeader: an Azure Blob copy answers a HEAD
// with no body and the copy's state in x-ms-copy-status. `pollwarden
// wait` (a real process) polls through pending to success, keeps the
// header fields as the result, and a provider echoing the credential in
// a header gets it redacted, never stored or printed.
func TestWaitReadsStateFromHeadHeader(t *testing.T) {
	t.Parallel()
	var calls, notHead atomic.Int32
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead || r.Header.Get("Authorization") != "Bearer "+canary {
			notHead.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h := w.Header()
		h.Set("x-ms-copy-id", "copy-"+canary)
		if n := calls.Add(1); n < 3 {
			h.Set("x-ms-copy-status", "pending")
			h.Set("x-ms-copy-progress", fmt.Sprintf("%d/100", n*40))
		} else {
			h.Set("x-ms-copy-status", "success")
			h.Add("x-ms-copy-status", "failed") // a second line is not read
			h.Set("x-ms-copy-progress", "100/100")
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(prov.Close)
	dir := t.TempDir()
	cfile := filepath.Join(dir, "blob-copy.yaml")
	if err := os.WriteFile(cfile, fmt.Appendf(nil, `version: 1
name: blob-copy
status:
  url: "%s/c/{job_id}"
  method: HEAD
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state:
  header: x-ms-copy-status
  pending: [pending]
  success: [success]
  failure: [failed]
  cancelled: [aborted]
result:
  require:
    - {header: x-ms-copy-progress, kind: string}
    - {header: X-Ms-Copy-Id, kind: string}
backoff: {base: 100ms, max: 200ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, prov.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	w := start(t, "wait", "--contract", cfile, "--job-id", "blob-1", "--operation-id", "op-blob", "--store", store, "--json")
	if code := w.exitCode(t); code != 0 {
		t.Fatalf("wait: exit %d\nstdout %s\nstderr %s", code, w.stdout.String(), w.stderr.String())
	}
	out := w.stdout.String()
	for _, want := range []string{`"success"`, `100/100`, `x-ms-copy-id`, `copy-[REDACTED]`} {
		if !strings.Contains(out, want) {
			t.Errorf("wait output lacks %s:\n%s", want, out)
		}
	}
	if n := calls.Load(); n < 3 {
		t.Errorf("%d HEAD requests, want the two pending answers and the success", n)
	}
	if n := notHead.Load(); n != 0 {
		t.Errorf("%d requests were not an authorized HEAD", n)
	}
	assertNoCanary(t, dir, w)
}

// TestWaitOnAzureBlobCopyBuiltin: the built-in azure-blob-copy, moved to a
// loopback fake by a one-line base_url, waits through a pending copy to
// success with a real `pollwarden wait`: HEAD on the blob's path (its
// slashes kept), the Bearer token from AZURE_STORAGE_TOKEN and
// x-ms-version on every request, the copy's id and progress as the result.
func TestWaitOnAzureBlobCopyBuiltin(t *testing.T) {
	t.Parallel()
	var calls, wrong atomic.Int32
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead || r.URL.Path != "/backups/2026/db.bak" || r.Header.Get("Authorization") != "Bearer "+canary ||
			r.Header.Get("x-ms-version") == "" {
			wrong.Add(1)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("x-ms-copy-id", "36650d67-05c9-4a24-9a7d-a2213e53caf6")
		if calls.Add(1) < 2 {
			h.Set("x-ms-copy-status", "pending")
			h.Set("x-ms-copy-progress", "0/1073741824")
		} else {
			h.Set("x-ms-copy-status", "success")
			h.Set("x-ms-copy-progress", "1073741824/1073741824")
		}
	}))
	t.Cleanup(prov.Close)
	dir := t.TempDir()
	cfile := filepath.Join(dir, "blob-local.yaml")
	if err := os.WriteFile(cfile, fmt.Appendf(nil, "version: 1\nextends: azure-blob-copy\nname: blob-local\nbase_url: %q\nbackoff: {base: 100ms, max: 200ms}\n", prov.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startEnv(t, []string{"AZURE_STORAGE_TOKEN=" + canary}, "wait", "--contract", cfile, "--job-id", "backups/2026/db.bak",
		"--operation-id", "op-azblob", "--store", filepath.Join(dir, "pw.db"), "--json")
	if code := w.exitCode(t); code != 0 {
		t.Fatalf("wait: exit %d\nstdout %s\nstderr %s", code, w.stdout.String(), w.stderr.String())
	}
	if out := w.stdout.String(); !strings.Contains(out, "1073741824/1073741824") || !strings.Contains(out, "36650d67-05c9-4a24-9a7d-a2213e53caf6") {
		t.Errorf("the result lacks the copy's id or progress:\n%s", out)
	}
	if calls.Load() < 2 || wrong.Load() != 0 {
		t.Errorf("%d good requests and %d that were not an authorized HEAD on the blob with x-ms-version", calls.Load(), wrong.Load())
	}
	assertNoCanary(t, dir, w)
}
