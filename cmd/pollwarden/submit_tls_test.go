package main

import (
	"encoding/pem"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSubmitStatusLocationPlainHTTPRefused: an https provider answers
// its submission with a 202 whose Operation-Location is plain http on
// its own host and port. The submission escalates integration_failure
// and nothing is sent there: the TLS server would log a plain-HTTP
// request reaching its port, and the test shows that it does.
func TestSubmitStatusLocationPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	statuses := 0
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Operation-Location", "http://"+srv.Listener.Addr().String()+"/jobs/job-1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"id":"job-1","status":"queued"}`)
	})
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		statuses++
		mu.Unlock()
		fmt.Fprint(w, `{"state":"succeeded","result":{"url":"https://files.example/a.csv"}}`)
	})
	srv = httptest.NewUnstartedServer(mux)
	var errs syncBuffer
	srv.Config.ErrorLog = log.New(&errs, "", 0)
	srv.StartTLS()
	defer srv.Close()

	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	path := submitContract(t, dir, srv.URL, "")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	withCA := strings.Replace(string(b), "  timeout: 1s\n", "  timeout: 1s\n  ca_file: \"file:"+ca+"\"\n", 1)
	if err := os.WriteFile(path, []byte(withCA), 0o600); err != nil {
		t.Fatal(err)
	}
	run := start(t, submitArgs(t, dir, path)...)
	wantLocationRefused(t, run, "plain http")
	mu.Lock()
	n := statuses
	mu.Unlock()
	const plain = "HTTP request to an HTTPS server"
	if n != 0 || strings.Contains(errs.String(), plain) {
		t.Fatalf("%d status requests; server log %q: something was sent to the plain-http location", n, errs.String())
	}
	assertNoCanary(t, dir, run)
	// The detector works: a plain request to that port is logged.
	if resp, err := http.Get("http://" + srv.Listener.Addr().String() + "/jobs/job-1"); err == nil {
		resp.Body.Close()
	}
	waitFor(t, "the TLS server to log a plain request", func() bool { return strings.Contains(errs.String(), plain) })
}
