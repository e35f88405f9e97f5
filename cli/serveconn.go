package cli

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds on what one client may hold of the daemon (docs/decisions.md,
// "Hardening").
const (
	// DefaultReadTimeout bounds reading one request's headers and body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMaxConnections caps the connections served at once; more
	// wait in the kernel's accept queue.
	DefaultMaxConnections = 1024
	// maxHeaderBytes caps a request's headers (a bearer token and a few
	// short fields are all the API reads).
	maxHeaderBytes = 64 << 10
	// idleTimeout closes a keep-alive connection no request used for that
	// long.
	idleTimeout = 60 * time.Second
	// writeTimeout bounds writing an API answer; long-polls hold one for
	// up to 60 s. MCP streams lift it for themselves (mcp.HTTPHandler).
	writeTimeout = 90 * time.Second
)

// newHTTPServer builds the daemon's server: a request's headers and body
// must arrive within readTimeout of its first byte. net/http lifts the read
// deadline once the body has been read to its end (it then watches the
// connection for a client that went away), so a long-poll or an MCP stream
// answering for minutes is not cut by it; a body never read to its end
// keeps the deadline, so the discard of it after the answer gives up then
// instead of waiting for ever (TestServeReadTimeoutSparesLongAnswers,
// TestServeDropsSlowClients).
func newHTTPServer(h http.Handler, readTimeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// limitListener serves at most n connections at once: Accept waits while
// n are open, leaving further clients in the kernel's accept queue, so a
// flood of connections costs a bounded number of descriptors.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back on the first Close.
type limitConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
