package httpapi

import (
	"errors"
	"net/http"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// resultTrailer carries the sha256 of a result handed over whole, so a
// client can check what it received against the audit.
const resultTrailer = "Pollwarden-Result-Sha256"

// result streams a succeeded operation's result from the provider (its
// own recorded action). Until the first byte, every refusal or failure is
// an ordinary error answer: 409 before anything was sent (wrong phase, no
// result.fetch, a URL off the contract's origins), 502 when the provider's
// answer is not a whole result within max_bytes (a declared
// Content-Length above it is refused before a byte is written). Once
// bytes have gone out, a failure aborts the response, so no client
// mistakes what it got for the result.
func (a *api) result(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	id := r.PathValue("id")
	lw := &lazyWriter{w: w}
	res, err := a.ops.FetchResult(r.Context(), operations.ResultParams{Caller: callerOf(r), ID: id}, lw)
	switch {
	case err == nil:
		if !lw.started {
			lw.start() // an empty result is still a result
		}
		w.Header().Set(resultTrailer, res.SHA256)
		return nil
	case res.Written || lw.started:
		a.log.WarnContext(r.Context(), "result fetch failed midway; response aborted", "operation", id, "error", err)
		panic(http.ErrAbortHandler)
	case errors.Is(err, operations.ErrResultFailed):
		return errorf(http.StatusBadGateway, codeBadGateway, "%s", err.Error())
	}
	return problem(err)
}

// lazyWriter answers 200 only when the first byte of the result arrives,
// so that everything before it can still be an error answer.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) start() {
	l.started = true
	h := l.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Trailer", resultTrailer)
	l.w.WriteHeader(http.StatusOK)
}

// Write passes each chunk on at once: a result is streamed to the
// client as it arrives, not held in the server's buffer.
func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	n, err := l.w.Write(p)
	if err == nil {
		err = http.NewResponseController(l.w).Flush()
	}
	return n, err
}
