package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// codeNotReady answers /readyz while the store does not accept writes.
const codeNotReady = "not_ready"

// readyWithin is how long /readyz waits for the store's write; a write
// still running then counts as refused (it goes on, and the next check
// waits for it rather than starting another).
const readyWithin = 5 * time.Second

// probeWindow bounds one probe once started, whoever waits for it.
const probeWindow = time.Minute

// readiness runs at most one probe at a time, so that callers of /readyz
// hammering a stuck store queue on one write, not one each.
type readiness struct {
	probe func(context.Context) error
	mu    sync.Mutex
	cur   *probeRun
}

type probeRun struct {
	done chan struct{}
	err  error
}

func newReadiness(ops *operations.Service) *readiness {
	return &readiness{probe: ops.Ready}
}

// check waits up to readyWithin for a probe: the one running, or a new
// one.
func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	run := r.cur
	if run == nil {
		run = &probeRun{done: make(chan struct{})}
		r.cur = run
		go func() {
			pctx, cancel := context.WithTimeout(context.Background(), probeWindow)
			defer cancel()
			run.err = r.probe(pctx)
			r.mu.Lock()
			r.cur = nil
			r.mu.Unlock()
			close(run.done)
		}()
	}
	r.mu.Unlock()
	t := time.NewTimer(readyWithin)
	defer t.Stop()
	select {
	case <-run.done:
		return run.err
	case <-t.C:
		return context.DeadlineExceeded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readyz answers 200 while the store accepts a write and 503 otherwise;
// /healthz stays the liveness answer. The cause goes to the log, never to
// the (unauthenticated) caller.
func (a *api) readyz(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	if err := a.ready.check(r.Context()); err != nil {
		a.log.ErrorContext(r.Context(), "not ready: the store did not accept a write", "error", err)
		return errorf(http.StatusServiceUnavailable, codeNotReady, "the store does not accept writes; see the server log")
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
