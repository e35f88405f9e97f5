package prober

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// caFile writes srv's certificate, which is its own CA, as a PEM file.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "file:" + path
}

func TestContractCA(t *testing.T) {
	cluster := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"state":"running"}`))
	}))
	cluster.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	cluster.StartTLS()
	t.Cleanup(cluster.Close)
	env := map[string]string{"EXPORT_API_TOKEN": token}
	// The prober's own transport: the system pool, which trusts neither
	// test server.
	p := New(Options{Now: time.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	c := testContract(cluster.URL)
	c.Status.Timeout = time.Minute // loading the system pool is slow on a loaded machine

	if resp := p.Status(context.Background(), c, cluster.URL+"/v1/jobs/1"); resp.Transport != pollwarden.TransportTLS {
		t.Fatalf("without the contract's CA: %+v, want a TLS failure", resp)
	}
	c.Status.CAFile = otherCA(t)
	if resp := p.Status(context.Background(), c, cluster.URL+"/v1/jobs/1"); resp.Transport != pollwarden.TransportTLS {
		t.Fatalf("under another CA: %+v, want a TLS failure", resp)
	}
	c.Status.CAFile = caFile(t, cluster)
	if resp := p.Status(context.Background(), c, cluster.URL+"/v1/jobs/1"); resp.Status != 200 || resp.Transport != "" {
		t.Fatalf("under the contract's CA: %+v", resp)
	}
	// Another contract on the same prober does not inherit that trust.
	c2 := testContract(cluster.URL)
	c2.Status.Timeout = time.Minute
	if resp := p.Status(context.Background(), c2, cluster.URL+"/v1/jobs/1"); resp.Transport != pollwarden.TransportTLS {
		t.Fatalf("a contract without the CA trusted the cluster: %+v", resp)
	}

	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("not a certificate"), 0o600)
	c.Status.CAFile = "file:" + bad
	resp := p.Status(context.Background(), c, cluster.URL+"/v1/jobs/1")
	if resp.Sent || !strings.Contains(resp.TransportDetail, "holds no PEM certificate") {
		t.Errorf("bad CA file: %+v", resp)
	}
}

// otherCA writes a freshly made self-signed CA (every httptest server
// shares one certificate, so another server would not do).
func otherCA(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return "file:" + path
}
