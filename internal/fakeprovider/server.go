package fakeprovider

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Request is one request the server received.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	Header http.Header
}

// Server is the fake provider. All methods are safe for concurrent use.
type Server struct {
	srv     *httptest.Server
	handler http.Handler
	done    chan struct{}
	once    sync.Once

	mu        sync.Mutex
	jobs      map[string]*job
	token     string
	onRequest func(jobID string)
	submits   int
	created   int
	byKey     map[string]string // Idempotency-Key → job id
}

// OnRequest sets a hook called while each status request is being served,
// before it is answered: a test can look at the client's store at the
// moment the provider sees the request.
func (s *Server) OnRequest(f func(jobID string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRequest = f
}

type job struct {
	scripted  bool
	steps     []Step
	next      int
	cancelled bool
	requests  []Request
	status    int // status requests
	cancels   int
	inFlight  int
	peak      int
}

// New starts a server on 127.0.0.1 with a random port.
func New() *Server {
	s := &Server{jobs: map[string]*job{}, byKey: map[string]string{}, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/jobs/{id}", s.serveStatus)
	mux.HandleFunc("POST /jobs/{id}/cancel", s.serveCancel)
	mux.HandleFunc("POST /jobs", s.serveSubmit)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "not found"})
	})
	s.handler = mux
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the base URL, e.g. http://127.0.0.1:41234; status is URL()+"/jobs/{id}".
func (s *Server) URL() string { return s.srv.URL }

// Handler serves the same jobs and records, for hosting on another listener
// (a subprocess test that needs a fixed address).
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends scripted delays and in-flight requests, then stops the server.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Script (re)defines jobID's answers: each status request takes the next
// step, the last repeating. It panics without steps: a test bug.
func (s *Server) Script(jobID string, steps ...Step) {
	if len(steps) == 0 {
		panic("fakeprovider: Script needs at least one step")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.job(jobID)
	j.scripted, j.steps, j.next, j.cancelled = true, append([]Step(nil), steps...), 0, false
}

// RequireToken makes every request without "Authorization: Bearer token"
// answer 401 (and still be recorded). An empty token turns the check off.
func (s *Server) RequireToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// Requests returns every request for jobID (status and cancel), in order.
func (s *Server) Requests(jobID string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[jobID]
	if j == nil {
		return nil
	}
	out := make([]Request, len(j.requests))
	for i, r := range j.requests {
		r.Header = r.Header.Clone()
		out[i] = r
	}
	return out
}

// Count is the number of status requests (not cancels) jobID received,
// the unit that request budgets are about.
func (s *Server) Count(jobID string) int {
	return s.read(jobID, func(j *job) int { return j.status })
}

// Cancels is the number of cancel requests jobID received.
func (s *Server) Cancels(jobID string) int {
	return s.read(jobID, func(j *job) int { return j.cancels })
}

// MaxInFlight is the peak number of concurrent requests for jobID.
func (s *Server) MaxInFlight(jobID string) int {
	return s.read(jobID, func(j *job) int { return j.peak })
}

// Authorization returns the Authorization header of each request for
// jobID, in order, "" where a request carried none.
func (s *Server) Authorization(jobID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[jobID]
	if j == nil {
		return nil
	}
	out := make([]string, len(j.requests))
	for i, r := range j.requests {
		out[i] = r.Header.Get("Authorization")
	}
	return out
}

func (s *Server) read(jobID string, f func(*job) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[jobID]; j != nil {
		return f(j)
	}
	return 0
}

// job returns jobID's entry, creating an unscripted one; s.mu must be held.
func (s *Server) job(jobID string) *job {
	j := s.jobs[jobID]
	if j == nil {
		j = &job{}
		s.jobs[jobID] = j
	}
	return j
}

// begin records r against jobID and counts it in flight; the returned func
// ends it. It reports whether the request carried the required token.
func (s *Server) begin(jobID string, r *http.Request, cancel bool) (end func(), authorized bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.job(jobID)
	j.requests = append(j.requests, Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
	if cancel {
		j.cancels++
	} else {
		j.status++
	}
	j.inFlight++
	j.peak = max(j.peak, j.inFlight)
	authorized = s.token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+s.token)) == 1
	return func() {
		s.mu.Lock()
		j.inFlight--
		s.mu.Unlock()
	}, authorized
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	end, ok := s.begin(id, r, false)
	defer end()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
		return
	}
	s.mu.Lock()
	j := s.jobs[id]
	var step Step
	known := j.scripted
	switch {
	case known && j.cancelled:
		step = State("cancelled", nil)
	case known:
		step = j.steps[min(j.next, len(j.steps)-1)]
		j.next++
	}
	hook := s.onRequest
	s.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	if !known {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no such job"})
		return
	}
	s.answer(w, r, id, step)
}

// serveCancel records a cancel; later status requests say "cancelled", as a
// real provider's would.
func (s *Server) serveCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	end, ok := s.begin(id, r, true)
	defer end()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
		return
	}
	s.mu.Lock()
	j := s.jobs[id]
	known := j.scripted
	if known {
		j.cancelled = true
	}
	s.mu.Unlock()
	if !known {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no such job"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job_id": id, "state": "cancelled"})
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, jobID string, st Step) {
	if st.Delay > 0 {
		t := time.NewTimer(st.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	body, isJSON, err := st.body(jobID)
	if err != nil {
		http.Error(w, "fakeprovider: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for k, v := range st.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" && (isJSON || strings.HasPrefix(strings.TrimSpace(st.Body), "{")) {
		w.Header().Set("Content-Type", "application/json")
	}
	status := st.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
