package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// canary holds characters that JSON and URL escaping change, so the escaped
// echoes are exercised too.
const canary = "sk-canary-7f3a<9>&b+c/d=="

// leakForms are the ways canary could be written back: raw, JSON-escaped
// by Go, percent-encoded, and a distinctive fragment of each.
var leakForms = []string{"sk-canary", "7f3a", url.QueryEscape(canary), url.PathEscape(canary)}

// stateContract is testContract with a state table and result paths, for
// the body's facts.
func stateContract(hosts ...string) *pollwarden.ContractSpec {
	c := testContract(hosts...)
	c.State = pollwarden.StateTable{Path: "state", Pending: []string{"running"}, Success: []string{"succeeded"},
		Failure: []string{"failed"}, Expired: []string{"expired"}}
	c.Result = pollwarden.ResultSpec{ErrorPath: "error", Require: []pollwarden.Field{
		{Path: "result.url", Kind: pollwarden.KindURL}, {Path: "result.meta", Kind: pollwarden.KindPresent}}}
	c.Hints = pollwarden.HintPaths{NextCheckAt: "next"}
	return c
}

func extractor(t *testing.T, c *pollwarden.ContractSpec) *contract.Loaded {
	t.Helper()
	x, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// jsonEscapeAll writes every character of s as \uXXXX, and a "/" as PHP
// writes it, so no byte of the raw secret appears in the body.
func jsonEscapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func TestProviderEchoOfSecretIsRedacted(t *testing.T) {
	var base string
	_, base = serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		h := w.Header()
		h.Set("X-Request-Id", "req-"+auth)
		h.Set("Retry-After", auth)
		h.Set("Location", base+"/next?token="+url.QueryEscape(strings.TrimPrefix(auth, "Bearer ")))
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		b, _ := json.Marshal(map[string]string{"error": "bad token", "you_sent": auth})
		_, _ = w.Write(append(b, []byte(" raw:"+auth+" path:"+url.PathEscape(auth))...))
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary})
	resp := p.Status(context.Background(), testContract(base), base+"/j")

	if resp.Status != http.StatusUnauthorized {
		t.Fatalf("resp = %+v", resp)
	}
	dump := fmt.Sprintf("%+v %s %s %s %s", resp, resp.RequestID, resp.RetryAfter, resp.Location, resp.TransportDetail)
	for _, leak := range leakForms {
		if strings.Contains(dump, leak) {
			t.Fatalf("secret leaked: %s", dump)
		}
	}
	if resp.RequestID != "req-Bearer [REDACTED]" || !strings.HasSuffix(resp.Location, "token=[REDACTED]") {
		t.Errorf("request id %q location %q", resp.RequestID, resp.Location)
	}
}

// TestJSONEscapedEchoIsRedacted is the attack of a provider that writes the
// secret back with every character \u-escaped, or with "/" as "\/" the way
// PHP does: raw-byte matching sees neither, the decoded strings show it.
func TestJSONEscapedEchoIsRedacted(t *testing.T) {
	escaped := jsonEscapeAll(canary)
	php := strings.ReplaceAll(canary, "/", `\/`)
	body := `{"state":"x` + escaped + `","error":{"message":"token ` + php + ` refused","` + escaped + `":1},` +
		`"result":{"url":"https://files.test/r?sig=` + escaped + `","meta":{"k":"` + php + `","list":["` + escaped + `"]}},` +
		`"next":"` + escaped + `"}`
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", `req-`+jsonEscapeAll(canary))
		w.Header().Set("Retry-After", strings.ToLower(url.QueryEscape(canary)))
		_, _ = w.Write([]byte(body))
	})
	if strings.Contains(body, canary) {
		t.Fatal("test body holds the raw canary")
	}
	c := stateContract(base)
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary}).Status(context.Background(), c, base+"/j")
	f := resp.Facts(extractor(t, c))
	b, _ := json.Marshal(f)
	dump := fmt.Sprintf("%s %+v %s", b, resp, f.Error)
	for _, leak := range append(leakForms, escaped, php) {
		if strings.Contains(dump, leak) {
			t.Fatalf("secret form %q leaked: %s", leak, dump)
		}
	}
	if f.State != "x[REDACTED]" || !f.HasState {
		t.Errorf("state %q", f.State)
	}
	if string(f.Error) != `{"[REDACTED]":1,"message":"token [REDACTED] refused"}` {
		t.Errorf("error %s", f.Error)
	}
	if f.Fields["result.url"] != "https://files.test/r?sig=[REDACTED]" || f.NextCheckAt != "[REDACTED]" {
		t.Errorf("fields %v next %v", f.Fields, f.NextCheckAt)
	}
	if resp.RequestID != "req-[REDACTED]" || resp.RetryAfter != "[REDACTED]" {
		t.Errorf("request id %q retry-after %q", resp.RequestID, resp.RetryAfter)
	}
}

// TestShortSecretKeepsListedState: with the secret "pire", the body
// {"state":"expired"} must still read as the listed state expired, and a
// text that merely contains it is redacted, not rewritten around it.
func TestShortSecretKeepsListedState(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"state":"expired","error":{"code":"expired","why":"lease pire"},"result":{"meta":"spired"}}`))
	})
	c := stateContract(base)
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": "pire"}).Status(context.Background(), c, base+"/j")
	f := resp.Facts(extractor(t, c))
	if f.State != "expired" || f.Problem != "" {
		t.Fatalf("state %q problem %q", f.State, f.Problem)
	}
	if string(f.Error) != `{"code":"expired","why":"lease [REDACTED]"}` || f.Fields["result.meta"] != "s[REDACTED]d" {
		t.Errorf("error %s fields %v", f.Error, f.Fields)
	}
}

// TestCutAfterRedaction is a long host followed by the secret: cutting the
// detail to its 200 bytes first kept the secret's first 13 characters.
func TestCutAfterRedaction(t *testing.T) {
	secret := "sk-canary-22charsecret"
	host := strings.Repeat("h", 160)
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://"+host+secret+".test/")
		w.Header().Set("X-Request-Id", strings.Repeat("r", 250)+secret)
		w.WriteHeader(http.StatusFound)
	})
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": secret}).Status(context.Background(), testContract(base), base)
	for _, frag := range []string{"sk-can", "sk-canary-22"} {
		if strings.Contains(fmt.Sprintf("%+v", resp), frag) {
			t.Fatalf("a part of the secret leaked: %+v", resp)
		}
	}
	if !strings.Contains(resp.TransportDetail, host+"[REDACTED]") || !strings.Contains(resp.TransportDetail, "[cut: ") {
		t.Errorf("detail = %q", resp.TransportDetail)
	}
	if len(resp.RequestID) > maxRequestIDLen+32 || !strings.Contains(resp.RequestID, "[cut: ") {
		t.Errorf("request id = %q", resp.RequestID)
	}
}

func TestRedactionInRefusedRedirectDetail(t *testing.T) {
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) {
		// A provider that puts the token in a hostname label is absurd,
		// but the detail is provider-controlled text all the same.
		w.Header().Set("Location", "http://"+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+".test/")
		w.WriteHeader(http.StatusFound)
	})
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": "sk-canary-hostlabel"})
	resp := p.Status(context.Background(), testContract(base), base)
	if strings.Contains(fmt.Sprintf("%+v", resp), "sk-canary") {
		t.Fatalf("secret leaked: %+v", resp)
	}
	if !strings.Contains(resp.TransportDetail, "[REDACTED]") {
		t.Errorf("detail = %q", resp.TransportDetail)
	}
}

// TestCaps: a 900 KB state, a state path that repeats it twenty times, a
// large error and large fields are kept cut, with the cut marked.
func TestCaps(t *testing.T) {
	big := strings.Repeat("s", 900<<10)
	body, _ := json.Marshal(map[string]any{"state": big, "error": map[string]any{"m": big},
		"result": map[string]any{"url": "https://files.test/" + big, "meta": []string{big}}, "next": big})
	_, base := serve(t, "api.test", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	c := stateContract(base)
	c.Status.MaxBodyBytes = 8 << 20
	c.State.Path = "join('', [state, state, state, state, state, state, state, state, state, state, state, state, state, state, state, state, state, state, state, state])"
	c.State.UnlistedPending = true
	resp := newTestProber(map[string]string{"EXPORT_API_TOKEN": canary}).Status(context.Background(), c, base+"/j")
	f := resp.Facts(extractor(t, c))
	b, _ := json.Marshal(f)
	if len(b) > MaxStateBytes+MaxErrorBytes*2+2*MaxFieldBytes+MaxHintBytes+1024 {
		t.Fatalf("facts are %d bytes", len(b))
	}
	if !strings.HasSuffix(f.State, fmt.Sprintf("…[cut: %d bytes]", 20*len(big)-MaxStateBytes)) || !f.HasState {
		t.Errorf("state ends %q", f.State[len(f.State)-40:])
	}
	if u := f.Fields["result.url"]; u != fmt.Sprintf("[cut: %d bytes]", len(big)+len("https://files.test/")) {
		t.Errorf("url field %.80v", u)
	}
	var e string
	if json.Unmarshal(f.Error, &e) != nil || !strings.Contains(e, "…[cut: ") {
		t.Errorf("error %.80s", f.Error)
	}
}

func TestShortSecretWarning(t *testing.T) {
	c := testContract("http://api.test")
	env := func(v string) func(string) (string, bool) { return func(string) (string, bool) { return v, true } }
	w := ShortSecretWarning(c, env("pire"), nil)
	if !strings.Contains(w, "env:EXPORT_API_TOKEN is shorter than 16 characters") || strings.Contains(w, "pire") {
		t.Errorf("warning %q", w)
	}
	if w := ShortSecretWarning(c, env("a-long-enough-secret"), nil); w != "" {
		t.Errorf("warning for a long secret: %q", w)
	}
	c.Status.Credential = nil
	if w := ShortSecretWarning(c, env("x"), nil); w != "" {
		t.Errorf("warning without a credential: %q", w)
	}
}

func TestDecoders(t *testing.T) {
	for in, want := range map[string]string{
		`a\/b\u0041\n\t\"\\x`: "a/bA\n\t\"\\x",
		`\ud83d\ude00 \u12`:   "\U0001F600 \\u12",
		`trailing\`:           `trailing\`,
	} {
		if got := jsonUnescape(in); got != want {
			t.Errorf("jsonUnescape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := pathDecode("a%2fb%2Fc%zz%4"); got != "a/b/c%zz%4" {
		t.Errorf("pathDecode = %q", got)
	}
	if got := queryDecode("a+b%2B"); got != "a b+" {
		t.Errorf("queryDecode = %q", got)
	}
}
