package fakeprovider

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func get(t *testing.T, method, url string, header map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("body %q: %v", b, err)
		}
	}
	return resp.StatusCode, resp.Header, body
}

func TestStepsInOrderLastRepeats(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script("exp_1",
		State("queued", nil),
		Code(429, map[string]string{"Retry-After": "120"}),
		State("running", map[string]any{"poll_after_seconds": 5}),
		Succeeded("https://files.example.com/r.csv"),
	)
	url := s.URL() + "/jobs/exp_1"

	if code, _, b := get(t, "GET", url, nil); code != 200 || b["state"] != "queued" || b["job_id"] != "exp_1" {
		t.Errorf("1: %d %v", code, b)
	}
	if code, h, b := get(t, "GET", url, nil); code != 429 || h.Get("Retry-After") != "120" || b != nil {
		t.Errorf("2: %d %v %v", code, h, b)
	}
	if code, h, b := get(t, "GET", url, nil); code != 200 || b["poll_after_seconds"] != 5.0 || h.Get("Content-Type") != "application/json" {
		t.Errorf("3: %d %v", code, b)
	}
	for i := 0; i < 2; i++ {
		code, _, b := get(t, "GET", url, nil)
		res, _ := b["result"].(map[string]any)
		if code != 200 || b["state"] != "succeeded" || res["url"] != "https://files.example.com/r.csv" {
			t.Errorf("last step (repeat %d): %d %v", i, code, b)
		}
	}
	if n := s.Count("exp_1"); n != 5 {
		t.Errorf("Count = %d", n)
	}
}

func TestRawBodyFailedAndUnknownJob(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script("raw", Step{Status: 502, Body: "<html>bad gateway</html>"})
	s.Script("bad", Failed("quota exceeded"))

	resp, err := http.Get(s.URL() + "/jobs/raw")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || string(b) != "<html>bad gateway</html>" || resp.Header.Get("Content-Type") == "application/json" {
		t.Errorf("raw: %d %q %q", resp.StatusCode, b, resp.Header.Get("Content-Type"))
	}
	_, _, body := get(t, "GET", s.URL()+"/jobs/bad", nil)
	if e, _ := body["error"].(map[string]any); body["state"] != "failed" || e["message"] != "quota exceeded" {
		t.Errorf("failed: %v", body)
	}
	if code, _, body := get(t, "GET", s.URL()+"/jobs/nope", nil); code != 404 || body["error"] != "no such job" {
		t.Errorf("unknown: %d %v", code, body)
	}
	if n := s.Count("nope"); n != 1 {
		t.Errorf("unknown job requests are recorded too: Count = %d", n)
	}
}

func TestCancel(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script("exp_1", State("running", nil))
	if code, _, b := get(t, "POST", s.URL()+"/jobs/exp_1/cancel", nil); code != 200 || b["state"] != "cancelled" {
		t.Errorf("cancel: %d %v", code, b)
	}
	if _, _, b := get(t, "GET", s.URL()+"/jobs/exp_1", nil); b["state"] != "cancelled" {
		t.Errorf("status after cancel: %v", b)
	}
	if code, _, _ := get(t, "POST", s.URL()+"/jobs/other/cancel", nil); code != 404 {
		t.Errorf("cancel unknown: %d", code)
	}
	reqs := s.Requests("exp_1")
	if s.Cancels("exp_1") != 1 || s.Count("exp_1") != 1 || len(reqs) != 2 || reqs[0].Method != "POST" || reqs[0].Path != "/jobs/exp_1/cancel" {
		t.Errorf("cancels=%d count=%d requests=%+v", s.Cancels("exp_1"), s.Count("exp_1"), reqs)
	}
}

func TestRequireTokenAndAuthorization(t *testing.T) {
	s := New()
	defer s.Close()
	s.RequireToken("secret-1")
	s.Script("j", State("running", nil))
	if code, _, _ := get(t, "GET", s.URL()+"/jobs/j", nil); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := get(t, "GET", s.URL()+"/jobs/j", map[string]string{"Authorization": "Bearer wrong"}); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if code, _, _ := get(t, "GET", s.URL()+"/jobs/j", map[string]string{"Authorization": "Bearer secret-1"}); code != 200 {
		t.Errorf("right token: %d", code)
	}
	got := s.Authorization("j")
	if strings.Join(got, "|") != "|Bearer wrong|Bearer secret-1" {
		t.Errorf("Authorization = %q", got)
	}
	// A rejected request does not consume a script step.
	s.RequireToken("")
	if _, _, b := get(t, "GET", s.URL()+"/jobs/j", nil); b["state"] != "running" {
		t.Errorf("after token off: %v", b)
	}
}

func TestRequestsAreCopies(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script("j", State("running", nil))
	get(t, "GET", s.URL()+"/jobs/j", map[string]string{"X-Probe": "1"})
	s.Requests("j")[0].Header.Set("X-Probe", "changed")
	if r := s.Requests("j")[0]; r.Header.Get("X-Probe") != "1" || r.Time.IsZero() {
		t.Errorf("request = %+v", r)
	}
}

func TestMaxInFlight(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script("serial", Step{JSON: map[string]any{"state": "running"}, Delay: 20 * time.Millisecond})
	s.Script("burst", Step{JSON: map[string]any{"state": "running"}, Delay: 200 * time.Millisecond})

	for i := 0; i < 3; i++ {
		get(t, "GET", s.URL()+"/jobs/serial", nil)
	}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(s.URL() + "/jobs/burst")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := s.MaxInFlight("serial"); n != 1 {
		t.Errorf("serial MaxInFlight = %d", n)
	}
	if n := s.MaxInFlight("burst"); n != 3 {
		t.Errorf("burst MaxInFlight = %d", n)
	}
	if n := s.MaxInFlight("never"); n != 0 {
		t.Errorf("unseen job MaxInFlight = %d", n)
	}
}

func TestDelayEndsWhenClientGivesUpAndOnClose(t *testing.T) {
	s := New()
	s.Script("slow", Step{Delay: time.Hour})
	c := &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := c.Get(s.URL() + "/jobs/slow"); err == nil {
		t.Fatal("expected a client timeout")
	}
	go func() { _, _ = http.Get(s.URL() + "/jobs/slow") }()
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a scripted delay")
	}
	s.Close() // idempotent
}

func TestHandlerOnOwnListener(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script("j", State("running", nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if _, _, b := get(t, "GET", "http://"+ln.Addr().String()+"/jobs/j", nil); b["state"] != "running" {
		t.Errorf("body = %v", b)
	}
	if s.Count("j") != 1 {
		t.Errorf("Count = %d", s.Count("j"))
	}
}

func TestScriptWithoutStepsPanics(t *testing.T) {
	s := New()
	defer s.Close()
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	s.Script("j")
}

// TestSubmitIdempotencyKey: a re-send with the key of an earlier
// submission answers that submission's job and creates none; another key,
// or none, creates a new job.
func TestSubmitIdempotencyKey(t *testing.T) {
	s := New()
	defer s.Close()
	post := func(key string) string {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/jobs", strings.NewReader(`{}`))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b struct{ ID string }
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
			t.Fatal(err)
		}
		return b.ID
	}
	a, again, other, none := post("k1"), post("k1"), post("k2"), post("")
	if a != again || a == other || none == a || none == other || s.Submits() != 4 || s.JobsCreated() != 3 {
		t.Fatalf("jobs %s %s %s %s; %d submissions, %d jobs", a, again, other, none, s.Submits(), s.JobsCreated())
	}
}
