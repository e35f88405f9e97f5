package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// recorder is a receiver on loopback (a Slack webhook, an OTLP collector)
// that keeps the body of every request to path ("" for any path) and
// answers "ok".
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newRecorder(t *testing.T, path string) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if path == "" || req.URL.Path == path {
			r.mu.Lock()
			r.bodies = append(r.bodies, b)
			r.mu.Unlock()
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(r.Close)
	return r
}

// Bodies returns the bodies received so far, in order.
func (r *recorder) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}
