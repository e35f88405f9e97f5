package scheduler_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/sqlite"
)

// inBubble runs f in a synctest bubble on a rig whose clock is the
// bubble's: time moves only when every goroutine of the test waits, so a
// rate, a backoff or an hour-long sleep is exact and takes no wall time.
// The fake provider's handler is served over an in-memory network inside
// the bubble (a goroutine waiting on a socket would stop the bubble's
// clock); it is the same net/http client and server, only the bytes go
// through net.Pipe instead of loopback. Its TCP listener, started outside,
// is never dialled. Scripts with a Delay are not for the bubble: the delay
// waits on a channel from outside it.
func inBubble(t *testing.T, f func(t *testing.T, r *rig)) {
	t.Parallel() // nothing in a bubble depends on the machine's speed
	srv := fp.New()
	t.Cleanup(srv.Close)
	synctest.Test(t, func(t *testing.T) {
		ln := newPipeListener()
		hs := &http.Server{Handler: srv.Handler()}
		go func() { _ = hs.Serve(ln) }()
		tr := &http.Transport{DialContext: ln.dial, MaxIdleConnsPerHost: 64}
		r := &rig{t: t, srv: srv, path: filepath.Join(t.TempDir(), "pw.db"),
			set: &contracts{exs: map[string]*contract.Loaded{}}, clock: pollwarden.RealClock{}, base: tr}
		t.Cleanup(func() {
			tr.CloseIdleConnections()
			_ = hs.Close()
		})
		r.store = r.open(sqlite.Options{})
		f(t, r)
	})
}

// pipeListener is a net.Listener whose connections are net.Pipe pairs
// made by dial.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial is the client side, for http.Transport.DialContext: whatever the
// address, it reaches the listener.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
