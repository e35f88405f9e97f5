package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/pollwarden/pollwarden"
)

// classify maps a failed request to a transport class (R12) and a
// detail, whole: call redacts it, then cuts it. Our own deadline wins over whatever error it surfaced as, because
// a timed-out request is an ambiguous delivery whatever layer noticed it.
func classify(ctx context.Context, err error, timeout time.Duration) (class, detail string) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return pollwarden.TransportTimeout, "no answer within " + timeout.String()
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err // drop "Get <url>:" — method and URL are known already
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsTimeout {
			return pollwarden.TransportTimeout, "dns lookup of " + dnsErr.Name + " timed out"
		}
		return pollwarden.TransportDNS, "dns lookup of " + dnsErr.Name + ": " + dnsErr.Err
	}
	if isTLS(err) {
		return pollwarden.TransportTLS, inner.Error()
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		detail := "connection refused"
		var op *net.OpError
		if errors.As(err, &op) && op.Addr != nil {
			detail += " by " + op.Addr.String()
		}
		return pollwarden.TransportRefused, detail
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return pollwarden.TransportTimeout, inner.Error()
	}
	if errors.Is(err, context.Canceled) {
		return pollwarden.TransportOther, "request cancelled"
	}
	return pollwarden.TransportOther, inner.Error()
}

// isTLS recognises handshake and certificate failures, local or remote.
func isTLS(err error) bool {
	var (
		rh   tls.RecordHeaderError
		cv   *tls.CertificateVerificationError
		ae   tls.AlertError
		ech  *tls.ECHRejectionError
		ua   x509.UnknownAuthorityError
		he   x509.HostnameError
		ci   x509.CertificateInvalidError
		sr   x509.SystemRootsError
		op   *net.OpError
		errs = []any{&rh, &cv, &ae, &ech, &ua, &he, &ci, &sr}
	)
	for _, target := range errs {
		if errors.As(err, target) {
			return true
		}
	}
	// A TLS alert from the peer arrives as an OpError "remote error"
	// wrapping an unexported alert type.
	if errors.As(err, &op) && op.Op == "remote error" {
		return true
	}
	// net/http turns a plain-HTTP answer to a TLS hello into its own
	// unwrapped error; it is still a failed handshake.
	msg := err.Error()
	return strings.Contains(msg, "tls: ") || strings.Contains(msg, "HTTP response to HTTPS client")
}
