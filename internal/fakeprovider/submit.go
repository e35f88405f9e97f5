package fakeprovider

import (
	"crypto/subtle"
	"fmt"
	"net/http"
)

// serveSubmit creates a job (POST /jobs): each submission is a new job
// "sub-N", answered 202 with {"id": "sub-N"}; script it beforehand to
// say how its status goes.
func (s *Server) serveSubmit(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
		return
	}
	s.mu.Lock()
	s.submits++
	id := fmt.Sprintf("sub-%d", s.submits)
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "state": "queued"})
}

// Submits counts the jobs created by POST /jobs.
func (s *Server) Submits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submits
}
