package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// exportConfig is what the standard OTEL_EXPORTER_OTLP_* variables say
// about the collector besides its address: the traces variable of each
// pair wins over the general one, as the OpenTelemetry exporter reads
// them.
type exportConfig struct {
	headers map[string]string
	timeout time.Duration
	gzip    bool
	tls     *tls.Config
}

// readConfig reads the exporter's variables through getenv; a value it
// cannot use is refused, naming the variable (never echoing a header's
// value, which may be a collector's credential).
func readConfig(getenv func(string) string, readFile func(string) ([]byte, error)) (exportConfig, error) {
	cfg := exportConfig{timeout: 10 * time.Second}
	get := func(name string) (string, string) {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v, "OTEL_EXPORTER_OTLP_TRACES_" + name
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name), "OTEL_EXPORTER_OTLP_" + name
	}
	if v, from := get("HEADERS"); v != "" {
		h, err := parseHeaders(v)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", from, err)
		}
		cfg.headers = h
	}
	if v, from := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || ms <= 0 {
			return cfg, fmt.Errorf("%s %q: want a whole number of milliseconds above 0, such as 10000", from, v)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	if v, from := get("COMPRESSION"); v != "" {
		switch strings.TrimSpace(v) {
		case "gzip":
			cfg.gzip = true
		case "none":
		default:
			return cfg, fmt.Errorf("%s %q: want gzip or none", from, v)
		}
	}
	tc, err := tlsConfig(get, readFile)
	if err != nil {
		return cfg, err
	}
	cfg.tls = tc
	return cfg, nil
}

// parseHeaders reads the W3C-baggage-like list key=value,key2=value2,
// values percent-decoded.
func parseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return nil, fmt.Errorf("entry %d is not key=value (values not shown)", i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil || strings.ContainsAny(dv, "\r\n") {
			return nil, fmt.Errorf("the value of %s is not a valid percent-encoded header value (not shown)", k)
		}
		out[k] = dv
	}
	return out, nil
}

// tlsConfig reads the collector's CA and the client's certificate and
// key (PEM files), nil when none is set.
func tlsConfig(get func(string) (string, string), readFile func(string) ([]byte, error)) (*tls.Config, error) {
	ca, caFrom := get("CERTIFICATE")
	cert, certFrom := get("CLIENT_CERTIFICATE")
	key, keyFrom := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := readFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caFrom, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %s: no PEM certificate in it", caFrom, ca)
		}
		tc.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together: set both or neither", certFrom, keyFrom)
	}
	if cert != "" {
		c, err := readFile(cert)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certFrom, err)
		}
		k, err := readFile(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyFrom, err)
		}
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			return nil, fmt.Errorf("%s / %s: %w", certFrom, keyFrom, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
