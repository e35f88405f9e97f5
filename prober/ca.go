package prober

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/pollwarden/pollwarden"
)

// caClients keeps one client per CA bundle's content, so a contract with
// its own CA reuses connections and a rotated bundle takes effect on the
// next request.
type caClients struct {
	mu sync.Mutex
	m  map[[32]byte]*http.Client
}

// clientFor returns the client for c's requests: the prober's own, or,
// when the contract names a CA file, one whose TLS trusts that file's
// certificates and nothing else — never the process-wide pool.
func (p *Prober) clientFor(c *pollwarden.ContractSpec) (*http.Client, error) {
	ref := c.Status.CAFile
	if ref == "" {
		return p.client, nil
	}
	path, _ := strings.CutPrefix(ref, "file:")
	pem, err := p.readFile(path)
	if err != nil {
		return nil, fmt.Errorf("ca file %s cannot be read", path)
	}
	key := sha256.Sum256(pem)
	p.cas.mu.Lock()
	defer p.cas.mu.Unlock()
	if cl := p.cas.m[key]; cl != nil {
		return cl, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca file %s holds no PEM certificate", path)
	}
	base, ok := p.client.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("a contract CA needs the prober's own HTTP transport")
	}
	t := base.Clone()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	}
	cfg.RootCAs = pool
	t.TLSClientConfig = cfg
	cl := &http.Client{Transport: t, CheckRedirect: p.client.CheckRedirect}
	if p.cas.m == nil {
		p.cas.m = map[[32]byte]*http.Client{}
	}
	p.cas.m[key] = cl
	return cl, nil
}
