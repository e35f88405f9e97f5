package contract

import (
	"os"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, file := range []string{"testdata/full.yaml", "testdata/full.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		minimal, base, "", "{}", "[]", "null", "~", "a: &x [*x]\n", "version: 1\n---\n",
		base + "bogus: {a: [1, {b: c}]}\n",
		strings.Replace(base, "pending: [running]", "pending: {a: b}", 1),
		strings.Replace(base, "path: status", "path: \"a[?b == `1`].c | [0]\"", 1),
		base + "limits: {deadline: 99999999999h, max_status_requests: 99999999999999999999}\n",
		base + "status: {credential: {secret: [env:X]}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned a contract with an error")
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if _, err := Compile(c); err != nil {
			t.Fatalf("Parse accepted a contract Compile refuses: %v", err)
		}
		if _, err := StatusURL(c, "job-1"); err != nil {
			t.Fatalf("StatusURL on a parsed contract: %v", err)
		}
		_ = Summary(c)
	})
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`{"state":"running","poll_after_seconds":30}`,
		`{"state":"succeeded","result":{"url":"https://x"}}`,
		`{"state":"failed","error":{"code":1}}`,
		`{"state":3}`, `[]`, `null`, `"x"`, ``, `{`, `{"state":["a"]}`,
		`{"status":"completed","conclusion":"success","data":{"job":{"state":"q"}}}`,
	} {
		f.Add([]byte(s), "state")
	}
	f.Add([]byte(`{"status":"completed","conclusion":null}`), "status == 'completed' && conclusion || status")
	f.Add([]byte(`{"a":[1,2,3]}`), "sort_by(a, &@) | [0]")
	f.Add([]byte(`{"a":[1,"x",{}]}`), "max(a)")
	f.Add([]byte(`{"a":"x"}`), "a[::0]")
	f.Fuzz(func(t *testing.T, body []byte, statePath string) {
		c := specContract()
		c.State.Path = statePath
		x, err := Compile(c)
		if err != nil {
			return
		}
		got := x.Extract(body)
		if got.HasState == (got.Problem != "") {
			t.Fatalf("HasState=%v with Problem %q", got.HasState, got.Problem)
		}
	})
}
