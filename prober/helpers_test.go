package prober

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testTransport dials every *.test host on loopback, keeping the port, so
// two servers on 127.0.0.1 can carry distinct hostnames for the
// allowed-host rule. Other names go through a resolver with no DNS server,
// which yields a real *net.DNSError.
func testTransport() *http.Transport {
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no dns server in tests")
	}}
	d := &net.Dialer{Resolver: noDNS}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".test") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return t
}

func newTestProber(env map[string]string) *Prober {
	return New(Options{
		Transport: testTransport(),
		Getenv:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		ReadFile:  os.ReadFile,
		Now:       func() time.Time { return fixedNow },
	})
}

// testContract is a status call with a Bearer credential from
// env:EXPORT_API_TOKEN, allowed on origins (the first is the status URL's).
func testContract(origins ...string) *pollwarden.ContractSpec {
	statusURL := ""
	if len(origins) > 0 {
		statusURL = origins[0] + "/v1/jobs/{job_id}"
	}
	return &pollwarden.ContractSpec{
		Version: 1,
		Name:    "report-export",
		Status: pollwarden.StatusCall{
			URL:          statusURL,
			Method:       http.MethodGet,
			Headers:      map[string]string{"Accept": "application/json"},
			Credential:   &pollwarden.Credential{Header: "Authorization", Scheme: "Bearer", Ref: "env:EXPORT_API_TOKEN"},
			Timeout:      2 * time.Second,
			MaxBodyBytes: 1 << 20,
			AllowedHosts: origins,
		},
	}
}

// recorder is a provider stub that remembers what reached it.
type recorder struct {
	mu      sync.Mutex
	reqs    []*http.Request
	handler http.HandlerFunc
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, r.Clone(context.Background()))
	rc.mu.Unlock()
	if rc.handler != nil {
		rc.handler(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"state":"running"}`))
}

func (rc *recorder) requests() []*http.Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*http.Request(nil), rc.reqs...)
}

// serve starts a loopback server and returns it with its base URL under
// the hostname name (which must end in .test).
func serve(t testing.TB, name string, h http.HandlerFunc) (*recorder, string) {
	t.Helper()
	rc := &recorder{handler: h}
	srv := httptest.NewServer(rc)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return rc, "http://" + name + ":" + port
}

// rawBody is the body as received, for tests of the transport itself.
func (r Response) rawBody() []byte {
	if r.body == nil {
		return nil
	}
	return r.body.raw
}
