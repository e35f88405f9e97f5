package fakeprovider

import (
	"crypto/subtle"
	"fmt"
	"net/http"
)

// serveSubmit creates a job (POST /jobs): each submission is a new job
// "sub-N", answered 202 with {"id": "sub-N"}; script it beforehand to
// say how its status goes. A submission carrying an Idempotency-Key seen
// before answers the job that key created, as providers that document
// idempotent submission do, so a re-send never makes a second job.
func (s *Server) serveSubmit(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.submits++
	id, seen := s.byKey[key]
	if !seen || key == "" {
		s.created++
		id = fmt.Sprintf("sub-%d", s.created)
		if key != "" {
			s.byKey[key] = id
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "state": "queued"})
}

// Submits counts the submissions received at POST /jobs.
func (s *Server) Submits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submits
}

// JobsCreated counts the jobs those submissions created: fewer than
// Submits when a re-send carried a key already seen.
func (s *Server) JobsCreated() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}
