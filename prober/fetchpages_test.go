package prober

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

const textractJob = "1e3b0a3b4fd2b1f0b7e4f1a3e0f8f0a1d7c3e9f5b2a4c6d8e0f1a2b3c4d5e6f7"

// textractPages are Textract's own GetDocumentAnalysis answers: the AWS
// CLI example, which carries a NextToken (the first page), and the same
// answer without it (the last page; see the built-in's SOURCES.md).
func textractPages(t *testing.T) (first, last []byte, token string) {
	t.Helper()
	dir := filepath.Join("..", "contract", "builtin", "testdata", "aws-textract-analysis")
	first, err := os.ReadFile(filepath.Join(dir, "succeeded.json"))
	if err != nil {
		t.Fatal(err)
	}
	last, err = os.ReadFile(filepath.Join(dir, "succeeded_last_page.json"))
	if err != nil {
		t.Fatal(err)
	}
	var page struct{ NextToken string }
	if json.Unmarshal(first, &page) != nil || page.NextToken == "" {
		t.Fatal("the first page has no NextToken")
	}
	return first, last, page.NextToken
}

// textractFake answers GetDocumentAnalysis pages as Textract does, and
// refuses a request whose signature does not check, as AWS does.
type textractFake struct {
	mu     sync.Mutex
	bodies []string
	badSig int
}

func (f *textractFake) handler(t *testing.T, secret string, pages map[string][]byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(body))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if !sigv4Checks(r, body, secret) || r.Header.Get("X-Amz-Target") != "Textract.GetDocumentAnalysis" {
			f.mu.Lock()
			f.badSig++
			f.mu.Unlock()
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"InvalidSignatureException","message":"The request signature we calculated does not match"}`))
			return
		}
		var in struct{ JobId, NextToken string }
		_ = json.Unmarshal(body, &in)
		page, ok := pages[in.NextToken]
		if !ok || in.JobId != textractJob {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"InvalidParameterException","Message":"bad token"}`))
			return
		}
		_, _ = w.Write(page)
	}
}

func textractBuiltin(t *testing.T, base, extra string) *pollwarden.ContractSpec {
	t.Helper()
	c, err := contract.Parse([]byte(fmt.Sprintf("version: 1\nextends: aws-textract-analysis\nname: aws-textract-analysis\nbase_url: %q\n%s", base, extra)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fetchOp(t *testing.T, p *Prober, c *pollwarden.ContractSpec, op *pollwarden.Operation, w io.Writer) FetchResponse {
	t.Helper()
	pager, err := contract.NewResultPager(c, op)
	if err != nil {
		t.Fatal(err)
	}
	h, err := contract.RequestHeaders(c, op.ProviderJobID, op.Vars)
	if err != nil {
		t.Fatal(err)
	}
	return p.Fetch(context.Background(), c, FetchRequest{Method: c.ResultFetch.Method, Page: pager.Page, Headers: h}, w)
}

// TestTextractResultPages: the built-in follows NextToken, each page a
// POST signed with its own body, and hands the pages over as JSON Lines
// whose bytes and digest the answer reports.
func TestTextractResultPages(t *testing.T) {
	const secret = "aws-secret-canary-5d2f0a1c9e"
	first, last, token := textractPages(t)
	fake := &textractFake{}
	_, base := serve(t, "textract.test", fake.handler(t, secret, map[string][]byte{"": first, token: last}))
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret}
	p := New(Options{Transport: testTransport(), Now: time.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	c := textractBuiltin(t, base, "")
	op := &pollwarden.Operation{ProviderJobID: textractJob, Result: []byte(`{"DocumentMetadata.Pages":1}`)}
	var out bytes.Buffer
	r := fetchOp(t, p, c, op, &out)
	if r.Problem != "" || r.Pages != 2 || fake.badSig != 0 {
		t.Fatalf("fetch: %+v, %d bad signatures", r, fake.badSig)
	}
	var want bytes.Buffer
	for _, page := range [][]byte{first, last} {
		_ = json.Compact(&want, page)
		want.WriteByte('\n')
	}
	sum := sha256.Sum256(want.Bytes())
	if out.String() != want.String() || r.Bytes != int64(want.Len()) || r.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("handed over %q (%d bytes, %s)", out.String(), r.Bytes, r.SHA256)
	}
	// The first page asks without a token (Textract refuses an empty
	// one); the second carries the first page's token.
	if len(fake.bodies) != 2 || strings.Contains(fake.bodies[0], "NextToken") || !strings.Contains(fake.bodies[1], `"NextToken":"`+token+`"`) {
		t.Fatalf("bodies sent: %q", fake.bodies)
	}

	// Signed under another key, the first page is refused: the check can
	// fail, and a refused page is a failed fetch.
	env["AWS_SECRET_ACCESS_KEY"] = "another-secret-key-value"
	if r := fetchOp(t, p, c, op, io.Discard); !strings.Contains(r.Problem, "answered 400") {
		t.Fatalf("a wrong signature: %+v", r)
	}
}

// TestResultPagesBounded: max_pages and max_bytes bound the pages
// together; a provider handing out the same token again is stopped.
func TestResultPagesBounded(t *testing.T) {
	const secret = "aws-secret-canary-5d2f0a1c9e"
	first, last, token := textractPages(t)
	var c1, c2 bytes.Buffer
	_, _ = json.Compact(&c1, first), json.Compact(&c2, last)
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret}
	p := New(Options{Transport: testTransport(), Now: time.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	op := &pollwarden.Operation{ProviderJobID: textractJob}
	for _, tc := range []struct {
		name, extra string
		pages       map[string][]byte
		want        string
		tooLarge    bool
	}{
		{"more pages than max_pages", "  fetch: {max_pages: 1}\n", map[string][]byte{"": first, token: last}, "more than the contract's max_pages 1", false},
		{"more bytes than max_bytes", fmt.Sprintf("  fetch: {max_bytes: %d}\n", c1.Len()+1+c2.Len()), map[string][]byte{"": first, token: last}, "max_bytes", true},
		{"the same token again", "", map[string][]byte{"": first, token: first}, "same next page twice", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &textractFake{}
			_, base := serve(t, "textract.test", fake.handler(t, secret, tc.pages))
			extra := ""
			if tc.extra != "" {
				extra = "result:\n" + tc.extra
			}
			c := textractBuiltin(t, base, extra)
			r := fetchOp(t, p, c, op, io.Discard)
			if !strings.Contains(r.Problem, tc.want) || r.TooLarge != tc.tooLarge {
				t.Fatalf("%+v, want a problem with %q", r, tc.want)
			}
		})
	}
}

// TestResultURLFromAnswerOnAnotherOrigin: a result URL the provider wrote
// (a {+field} of the status answer) on another host, port or scheme is
// refused before anything is sent there; on a wildcard origin it is
// fetched.
func TestResultURLFromAnswerOnAnotherOrigin(t *testing.T) {
	api, base := serve(t, "api.test", nil)
	other, otherBase := serve(t, "api.test", nil)
	files, filesBase := serve(t, "eu.files.test", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("result")) })
	_, port, _ := strings.Cut(strings.TrimPrefix(base, "http://"), ":")
	_, filesPort, _ := strings.Cut(strings.TrimPrefix(filesBase, "http://"), ":")
	c, err := contract.Parse([]byte(fmt.Sprintf(`version: 1
name: results
status:
  url: %s/v1/jobs/{job_id}
  allowed_hosts: [api.test, "http://*.files.test:%s"]
  credential: {header: Authorization, scheme: Bearer, secret: "env:EXPORT_API_TOKEN"}
state: {path: status, pending: [running], success: [done]}
result:
  require: [{path: results_url, kind: url}]
  fetch: {url: "{+results_url}", max_bytes: 1024}
`, base, filesPort)))
	if err != nil {
		t.Fatal(err)
	}
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "tok-canary-31f"})
	for _, bad := range []string{
		otherBase + "/r",                             // another port
		"https://api.test:" + port + "/r",            // another scheme
		"http://evil.test:" + port + "/r",            // another host
		"http://a.eu.files.test:" + filesPort + "/r", // deeper than the wildcard
		"http://eu.files.test:" + port + "/r",        // another port under the wildcard
	} {
		op := &pollwarden.Operation{ProviderJobID: "j", Result: []byte(`{"results_url":"` + bad + `"}`)}
		pager, err := contract.NewResultPager(c, op)
		if err != nil {
			t.Fatal(err)
		}
		r := p.Fetch(context.Background(), c, FetchRequest{Method: "GET", Page: pager.Page}, io.Discard)
		if r.Sent || !strings.Contains(r.Problem, "not an allowed origin") {
			t.Errorf("%s: %+v", bad, r)
		}
	}
	if n := len(api.requests()) + len(other.requests()) + len(files.requests()); n != 0 {
		t.Fatalf("%d requests reached a server", n)
	}
	op := &pollwarden.Operation{ProviderJobID: "j", Result: []byte(`{"results_url":"` + filesBase + `/r"}`)}
	pager, _ := contract.NewResultPager(c, op)
	var out bytes.Buffer
	if r := p.Fetch(context.Background(), c, FetchRequest{Method: "GET", Page: pager.Page}, &out); r.Problem != "" || out.String() != "result" {
		t.Fatalf("wildcard origin: %+v %q", r, out.String())
	}
}

// TestResultPageHoldingTheCredential: a page that echoes the credential,
// as it is or JSON-escaped, is not handed over; the pages before it are,
// and the fetch fails.
func TestResultPageHoldingTheCredential(t *testing.T) {
	const token = "tok-canary-8d1e"
	escaped := ""
	for _, r := range token {
		escaped += fmt.Sprintf(`\u%04x`, r)
	}
	for _, echo := range []string{token, escaped} {
		t.Run(echo[:2], func(t *testing.T) { pageEchoes(t, token, echo) })
	}
}

func pageEchoes(t *testing.T, token, echo string) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "" {
			_, _ = w.Write([]byte(`{"items":[1],"next":"p2"}`))
			return
		}
		_, _ = w.Write([]byte(`{"items":["` + echo + `"]}`))
	})
	c, err := contract.Parse([]byte(fmt.Sprintf(`version: 1
name: paged
status:
  url: %s/v1/jobs/{job_id}
  credential: {header: Authorization, scheme: Bearer, secret: "env:EXPORT_API_TOKEN"}
state: {path: status, pending: [running], success: [done]}
result:
  fetch: {url: "%s/v1/jobs/{job_id}/items?page={next_token}", next: next, max_bytes: 4096}
`, base, base)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := fetchOp(t, newTestProber(map[string]string{"EXPORT_API_TOKEN": token}), c, &pollwarden.Operation{ProviderJobID: "j"}, &out)
	if !strings.Contains(r.Problem, "holds the contract's credential") || strings.Contains(out.String()+r.Problem, echo) || out.String() != "{\"items\":[1],\"next\":\"p2\"}\n" {
		t.Fatalf("%+v, handed over %q", r, out.String())
	}
}

// BenchmarkFetchTextractPages fetches a 100-page analysis (Textract's own
// page, repeated under new tokens) over loopback, each page signed.
func BenchmarkFetchTextractPages(b *testing.B) {
	dir := filepath.Join("..", "contract", "builtin", "testdata", "aws-textract-analysis")
	page, err := os.ReadFile(filepath.Join(dir, "succeeded_last_page.json"))
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(page, &doc)
	_, base := serve(b, "textract.test", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ NextToken string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		n := 0
		fmt.Sscan(in.NextToken, &n)
		out := map[string]any{"Blocks": doc["Blocks"], "DocumentMetadata": doc["DocumentMetadata"], "JobStatus": "SUCCEEDED"}
		if n < 99 {
			out["NextToken"] = fmt.Sprint(n + 1)
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "bench-secret-key"}
	p := New(Options{Transport: testTransport(), Now: time.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	c, err := contract.Parse([]byte(fmt.Sprintf("version: 1\nextends: aws-textract-analysis\nname: aws-textract-analysis\nbase_url: %q\n", base)))
	if err != nil {
		b.Fatal(err)
	}
	pager, _ := contract.NewResultPager(c, &pollwarden.Operation{ProviderJobID: textractJob})
	h, _ := contract.RequestHeaders(c, textractJob, nil)
	b.ReportAllocs()
	for b.Loop() {
		r := p.Fetch(context.Background(), c, FetchRequest{Method: "POST", Page: pager.Page, Headers: h}, io.Discard)
		if r.Problem != "" || r.Pages != 100 {
			b.Fatalf("%+v", r)
		}
	}
}
