package prober

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The SigV4 check below is written from the algorithm as AWS documents it
// ("Create a signed AWS API request", IAM user guide), independently of the
// SDK signer the prober uses, and is itself held to the documentation's
// worked example in TestSigV4CheckerMatchesAWSExample.

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

// sigv4Signature computes the signature of a request given as its parts:
// headers by lower-case name, the signed ones listed in order.
func sigv4Signature(secret, region, service, amzDate, method, path, query string, headers map[string]string, signed []string, body []byte) string {
	var canon strings.Builder
	canon.WriteString(method + "\n" + path + "\n" + canonicalQuery(query) + "\n")
	for _, h := range signed {
		canon.WriteString(h + ":" + strings.Join(strings.Fields(headers[h]), " ") + "\n")
	}
	canon.WriteString("\n" + strings.Join(signed, ";") + "\n" + hexSHA256(body))
	scope := amzDate[:8] + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hexSHA256([]byte(canon.String()))
	return hex.EncodeToString(hmacSHA256(signingKey(secret, amzDate[:8], region, service), toSign))
}

func canonicalQuery(q string) string {
	if q == "" {
		return ""
	}
	v, _ := url.ParseQuery(q)
	var parts []string
	for k, vs := range v {
		for _, x := range vs {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(x))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

// TestSigV4CheckerMatchesAWSExample holds the checker to the worked example
// of the AWS documentation (IAM ListUsers, 20150830T123600Z, the example
// secret key): its signing key and its signature.
func TestSigV4CheckerMatchesAWSExample(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	if got := hex.EncodeToString(signingKey(secret, "20150830", "us-east-1", "iam")); got != "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9" {
		t.Fatalf("signing key %s", got)
	}
	got := sigv4Signature(secret, "us-east-1", "iam", "20150830T123600Z", "GET", "/", "Action=ListUsers&Version=2010-05-08",
		map[string]string{"content-type": "application/x-www-form-urlencoded; charset=utf-8", "host": "iam.amazonaws.com", "x-amz-date": "20150830T123600Z"},
		[]string{"content-type", "host", "x-amz-date"}, nil)
	if got != "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7" {
		t.Fatalf("signature %s", got)
	}
}

// sigv4Provider refuses, as AWS does, a request whose signature does not
// check under secret, and otherwise answers as Textract does.
func sigv4Provider(t *testing.T, secret string) (*recorder, string) {
	return serve(t, "textract.test", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if !sigv4Checks(r, body, secret) {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"InvalidSignatureException","message":"The request signature we calculated does not match"}`))
			return
		}
		_, _ = w.Write([]byte(`{"JobStatus":"IN_PROGRESS","error":"token ` + r.Header.Get("X-Amz-Security-Token") + `"}`))
	})
}

// sigv4Checks reports whether r, whose body was body, carries a SigV4
// signature that checks under secret and covers X-Amz-Target and Host.
func sigv4Checks(r *http.Request, body []byte, secret string) bool {
	auth := r.Header.Get("Authorization")
	cred, _, _ := strings.Cut(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 Credential="), ",")
	scope := strings.Split(cred, "/")
	var signed []string
	var sig string
	for _, part := range strings.Split(auth, ", ") {
		if v, ok := strings.CutPrefix(part, "SignedHeaders="); ok {
			signed = strings.Split(v, ";")
		}
		if v, ok := strings.CutPrefix(part, "Signature="); ok {
			sig = v
		}
	}
	headers := map[string]string{"host": r.Host, "content-length": strconv.FormatInt(r.ContentLength, 10)}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	return len(scope) == 5 && contains(signed, "x-amz-target") && contains(signed, "host") &&
		sig == sigv4Signature(secret, scope[2], scope[3], r.Header.Get("X-Amz-Date"), r.Method, r.URL.EscapedPath(), r.URL.RawQuery, headers, signed, body)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sigv4Contract(base string) *pollwarden.ContractSpec {
	c := testContract(base)
	c.Status.Method, c.Status.Safe = http.MethodPost, true
	c.Status.Headers = map[string]string{"X-Amz-Target": "Textract.GetDocumentAnalysis", "Content-Type": "application/x-amz-json-1.1"}
	c.Status.Credential = &pollwarden.Credential{Kind: pollwarden.CredentialSigV4, Region: "us-east-1", Service: "textract",
		AccessKeyID: "env:AWS_ACCESS_KEY_ID", Ref: "env:AWS_SECRET_ACCESS_KEY", SessionToken: "env:AWS_SESSION_TOKEN"}
	c.State.Path, c.State.Pending = "JobStatus", []string{"IN_PROGRESS"}
	return c
}

func TestSigV4SignsTheStatusRequestAndBody(t *testing.T) {
	const secret, session = "aws-secret-canary-4c1e9f0b2d", "aws-session-canary-77e2a1"
	api, base := sigv4Provider(t, secret)
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": session}
	p := New(Options{Transport: testTransport(), Now: time.Now, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	c := sigv4Contract(base)
	body := []byte(`{"JobId":"a1b2c3"}`)
	resp := p.StatusWithBody(context.Background(), c, base+"/", body)
	if resp.Status != 200 {
		t.Fatalf("signed request refused: %+v", resp)
	}
	got := api.requests()[0]
	if !strings.HasPrefix(got.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") ||
		got.Header.Get("X-Amz-Security-Token") != session {
		t.Errorf("headers sent: %v", got.Header)
	}
	noCanary(t, c, resp, secret, session)

	// The same request signed under another key, or with another body
	// than the one signed, does not check: the checker can fail.
	env["AWS_SECRET_ACCESS_KEY"] = "another-secret-key-value"
	if resp := p.StatusWithBody(context.Background(), c, base+"/", body); resp.Status != 400 {
		t.Errorf("a wrong key passed the check: %+v", resp)
	}
}
