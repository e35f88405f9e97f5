package console

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"time"
)

// streamLife ends a live stream after a while; the browser's EventSource
// reconnects on its own, and an ended session is noticed there.
const streamLife = 5 * time.Minute

// queueEvents streams "change" whenever the queue would look different:
// signalled by the controller's changes, re-read every recheck for
// changes made by other processes.
func (c *Console) queueEvents(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	signal, stop := c.ops.SubscribeAll()
	defer stop()
	c.stream(w, r, signal, func(ctx context.Context) (uint64, error) {
		ops, err := c.list(ctx, v.Caller, "", filter{})
		if err != nil {
			return 0, err
		}
		h := fnv.New64a()
		for _, op := range ops {
			fmt.Fprintf(h, "%s/%d;", op.ID, op.Version)
		}
		return h.Sum64(), nil
	})
}

// operationEvents streams "change" when the operation's record changes.
func (c *Console) operationEvents(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	id := r.PathValue("id")
	signal, stop := c.ops.Subscribe(id)
	defer stop()
	c.stream(w, r, signal, func(ctx context.Context) (uint64, error) {
		op, err := c.visible(ctx, v.Caller, id)
		if err != nil {
			return 0, err
		}
		return uint64(op.Version), nil
	})
}

// stream writes server-sent events: "change" each time state() differs
// from the last look, a comment now and then to keep proxies from closing
// an idle stream. It ends with the request, the console's Close, or
// streamLife.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, signal <-chan struct{}, state func(context.Context) (uint64, error)) {
	ctx := r.Context()
	last, err := state(ctx)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	send := func(s string) bool {
		// Each write gets its own deadline, whatever the server's write
		// timeout, so a stream outlives it and a stuck reader does not.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n\n") {
		return
	}
	clk := c.ops.Clock()
	tick, ticks := clk.NewTicker(c.recheck)
	defer tick.Stop()
	end, ended := clk.NewTimer(streamLife)
	defer end.Stop()
	quiet := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-ended:
			return
		case <-signal:
		case <-ticks:
		}
		now, err := state(ctx)
		if err != nil {
			return
		}
		msg := ""
		quiet++
		switch {
		case now != last:
			last, quiet, msg = now, 0, "event: change\ndata: {}\n\n"
		case time.Duration(quiet)*c.recheck >= 15*time.Second:
			quiet, msg = 0, ": still here\n\n"
		}
		if msg != "" && !send(msg) {
			return
		}
		// A busy fleet signals often: look at most a few times a second.
		pause, paused := clk.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-c.done:
		case <-paused:
		}
		pause.Stop()
	}
}
