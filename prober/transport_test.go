package prober

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestTransportClasses(t *testing.T) {
	env := map[string]string{"EXPORT_API_TOKEN": token}

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		resp := newTestProber(env).Status(context.Background(), testContract("http://api.test:"+port), "http://api.test:"+port+"/")
		expectTransport(t, resp, pollwarden.TransportRefused, "connection refused")
	})

	t.Run("timeout", func(t *testing.T) {
		_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		c := testContract(base)
		c.Status.Timeout = 100 * time.Millisecond
		start := time.Now()
		resp := newTestProber(env).Status(context.Background(), c, base)
		expectTransport(t, resp, pollwarden.TransportTimeout, "100ms")
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("timeout took %v", el)
		}
	})

	t.Run("timeout while reading the body keeps the status", func(t *testing.T) {
		_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"state":`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		c := testContract(base)
		c.Status.Timeout = 100 * time.Millisecond
		resp := newTestProber(env).Status(context.Background(), c, base)
		expectTransport(t, resp, pollwarden.TransportTimeout, "reading body")
		if resp.Status != 200 || resp.rawBody() != nil {
			t.Errorf("status=%d body=%q", resp.Status, resp.rawBody())
		}
	})

	t.Run("dns", func(t *testing.T) {
		resp := newTestProber(env).Status(context.Background(), testContract("http://nowhere.invalid"), "http://nowhere.invalid/")
		expectTransport(t, resp, pollwarden.TransportDNS, "nowhere.invalid")
	})

	t.Run("tls unknown authority", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		defer srv.Close()
		resp := newTestProber(env).Status(context.Background(), testContract(srv.URL), srv.URL)
		expectTransport(t, resp, pollwarden.TransportTLS, "certificate")
	})

	t.Run("tls to a plain server", func(t *testing.T) {
		_, base := serve(t, "api.test", nil)
		resp := newTestProber(env).Status(context.Background(), testContract(strings.Replace(base, "http:", "https:", 1)), strings.Replace(base, "http:", "https:", 1))
		expectTransport(t, resp, pollwarden.TransportTLS, "HTTPS")
	})

	t.Run("connection dropped", func(t *testing.T) {
		_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		})
		resp := newTestProber(env).Status(context.Background(), testContract(base), base)
		expectTransport(t, resp, pollwarden.TransportOther, "EOF")
		if strings.Contains(resp.TransportDetail, "http://") {
			t.Errorf("detail repeats the URL: %q", resp.TransportDetail)
		}
	})

	t.Run("caller cancelled", func(t *testing.T) {
		_, base := serve(t, "api.test", nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp := newTestProber(env).Status(ctx, testContract(base), base)
		expectTransport(t, resp, pollwarden.TransportOther, "cancelled")
	})
}

func expectTransport(t *testing.T, resp Response, class, detail string) {
	t.Helper()
	if resp.Transport != class || !strings.Contains(resp.TransportDetail, detail) {
		t.Errorf("transport = %q %q, want %q containing %q", resp.Transport, resp.TransportDetail, class, detail)
	}
	if !resp.Sent || resp.SentAt.IsZero() || resp.ReceivedAt.IsZero() {
		t.Errorf("sent=%v sentAt=%v receivedAt=%v", resp.Sent, resp.SentAt, resp.ReceivedAt)
	}
	if len(resp.TransportDetail) > maxDetail+len(cutMark(1<<20)) {
		t.Errorf("detail too long: %d", len(resp.TransportDetail))
	}
}

func TestCutKeepsRunesAndMarksTheCut(t *testing.T) {
	s := cut(strings.Repeat("é", 300), maxDetail)
	if !strings.HasPrefix(s, strings.Repeat("é", maxDetail/2)+"…[cut: 400 bytes]") || len(s) > maxDetail+len(cutMark(400)) {
		t.Errorf("cut = %q", s)
	}
	if s := cut("short", maxDetail); s != "short" {
		t.Errorf("cut = %q", s)
	}
}
