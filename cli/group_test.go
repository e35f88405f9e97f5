package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
	"github.com/pollwarden/pollwarden/tracing"
)

// TestGroupWaitsForEveryPart: once stopped, a group's wait returns only
// after its slowest part has returned, and a failing part stops the
// others and is the error wait returns.
func TestGroupWaitsForEveryPart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t.Context())
		finish := make(chan struct{})
		var finished atomic.Bool
		g.start(func(ctx context.Context) error { <-ctx.Done(); return nil })
		g.start(func(ctx context.Context) error {
			<-ctx.Done()
			<-finish // a transaction that outlives the stop
			finished.Store(true)
			return nil
		})
		var returned atomic.Bool
		go func() { g.wait(); returned.Store(true) }()
		g.stop()
		synctest.Wait()
		if returned.Load() {
			t.Fatal("wait returned while a part was still running")
		}
		close(finish)
		synctest.Wait()
		if !returned.Load() || !finished.Load() {
			t.Fatalf("after the last part returned: wait returned %v, part finished %v", returned.Load(), finished.Load())
		}

		boom := errors.New("listener failed")
		g = newGroup(t.Context())
		g.start(func(ctx context.Context) error { <-ctx.Done(); return nil })
		g.start(func(context.Context) error { return boom })
		if err := g.wait(); err != boom {
			t.Fatalf("wait = %v, want the failing part's error", err)
		}
	})
}

// slowPruneStore is a store whose prune holds its transaction until
// released, whatever its context says.
type slowPruneStore struct {
	*sqlite.Store
	started  chan struct{}
	release  chan struct{}
	once     sync.Once
	finished atomic.Bool
}

func (s *slowPruneStore) OperationPrune(ctx context.Context, p pollwarden.PruneParams) (pollwarden.PruneResult, error) {
	s.once.Do(func() { close(s.started) })
	<-s.release
	s.finished.Store(true)
	return pollwarden.PruneResult{}, nil
}

// closeListener tells when serve's HTTP server has closed it, the last
// step of a shutdown that does not wait for its other parts.
type closeListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// TestServeWaitsForThePruneLoop: serve's shutdown waits for the prune
// loop's pass to finish its transaction, with the scheduler, the decision
// clock and the HTTP server, before it returns (and its caller closes the
// store under it).
func TestServeWaitsForThePruneLoop(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	slow := &slowPruneStore{Store: st, started: make(chan struct{}), release: make(chan struct{})}
	cdir := t.TempDir()
	writeFile(t, filepath.Join(cdir, "a.yaml"), strings.ReplaceAll(reloadContract, "%s", "a"))
	set, err := contract.LoadDir(cdir)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := tokens.New(tokens.Spec{Name: "bot", Role: pollwarden.RoleAgent, SHA256: tokens.Hash("tok-bot")})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &closeListener{Listener: raw, closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	env := Env{Stdout: io.Discard, Stderr: io.Discard}
	type result struct {
		err error
		// pruned is whether the prune had finished when serve returned.
		pruned bool
	}
	served := make(chan result, 1)
	go func() {
		err := serve(ctx, env, ln, slow, set, reloadable{tokens: toks}, nil, false, 2, 5*time.Second, time.Hour,
			slog.New(slog.NewTextHandler(io.Discard, nil)), &tracing.Tracing{})
		served <- result{err, slow.finished.Load()}
	}()
	<-slow.started
	cancel()
	// The HTTP server has closed its listener: a shutdown that did not
	// wait for the prune loop returns about now, long before a second
	// has passed. (The group's own waiting is proven without a clock in
	// TestGroupWaitsForEveryPart; this proves the prune loop is a part.)
	<-ln.closed
	select {
	case r := <-served:
		t.Fatalf("serve returned (%v) while the prune loop was still in its transaction", r.err)
	case <-time.After(time.Second):
	}
	close(slow.release)
	r := <-served
	if r.err != nil {
		t.Fatalf("serve: %v", r.err)
	}
	if !r.pruned {
		t.Fatal("serve returned while the prune loop was still in its transaction")
	}
}
