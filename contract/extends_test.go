package contract

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtendsSpecExample is the SPEC's own example: one line moves the
// whole built-in to a local fake, and the credential is replaced whole.
func TestExtendsSpecExample(t *testing.T) {
	c, err := Parse([]byte(`{version: 1, extends: openai-batch, name: openai-batch-local,
  base_url: "http://127.0.0.1:18301",
  status: {credential: {header: X-Api-Key, secret: "env:LOCAL_KEY"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "openai-batch-local" || c.Status.URL != "http://127.0.0.1:18301/v1/batches/{job_id}" {
		t.Fatalf("name %q, status url %q", c.Name, c.Status.URL)
	}
	if cr := c.Status.Credential; cr == nil || cr.Header != "X-Api-Key" || cr.Scheme != "" || cr.Ref != "env:LOCAL_KEY" {
		t.Fatalf("credential %+v: want the extending file's, whole (no Bearer scheme kept)", cr)
	}
	if u, err := CancelURL(c, "b1"); err != nil || u != "http://127.0.0.1:18301/v1/batches/b1/cancel" {
		t.Fatalf("cancel %q, %v", u, err)
	}
	if len(c.State.Pending) != 4 || c.Result.Require[0].Path != "output_file_id" {
		t.Fatalf("the base's state table and result were not kept: %+v %+v", c.State, c.Result)
	}
}

func TestExtendsMergeRules(t *testing.T) {
	c, err := Parse([]byte(`version: 1
extends: openai-batch
name: ob
cancel: null
hints: {job_expires_at: null}
state: {pending: [validating]}
limits: {max_status_requests: 20}
`))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.Cancel != nil:
		t.Error("cancel: null did not remove the base's cancel")
	case c.Hints.JobExpiresAt != "":
		t.Error("a null inside a map did not remove the base's key")
	case len(c.State.Pending) != 1 || len(c.State.Success) != 1:
		t.Errorf("a list replaces the base's, the rest of the map merges: %+v", c.State)
	case c.Limits.MaxStatusRequests != 20 || c.Limits.MaxTransportFailures != 5:
		t.Errorf("limits %+v", c.Limits)
	}
}

func TestExtendsProblems(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"unknown base":  {"version: 1\nextends: nopenai\nname: x\n", `line 2: extends: unknown base contract "nopenai" (built-ins: `},
		"not a name":    {"version: 1\nextends: [a]\nname: x\n", "line 2: extends: must name a contract"},
		"own line kept": {"version: 1\nextends: openai-batch\nname: x\nlimits:\n  max_status_requests: 0\n", "line 5: limits.max_status_requests: must be at least 1"},
		"typo":          {"version: 1\nextends: openai-batch\nname: x\nstatus: {urll: /x}\n", "line 4: status.urll: unknown key"},
		"required null": {"version: 1\nextends: openai-batch\nname: x\nstatus: {url: null}\n", "status.url: missing (required)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v; want %q", err, tc.want)
			}
		})
	}
}

func tempFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestExtendsInDirectory: a file may extend another loaded one; a cycle is
// refused naming the chain; a file named like a built-in wins over it and
// may itself extend that built-in.
func TestExtendsInDirectory(t *testing.T) {
	dir := tempFiles(t, map[string]string{
		"team.yaml":  "version: 1\nextends: openai-batch\nname: team\nlimits: {max_status_requests: 30}\n",
		"child.yaml": "version: 1\nextends: team\nname: child\nbase_url: \"https://gw.example.com\"\n",
		"own.yaml":   "version: 1\nextends: openai-batch\nname: openai-batch\nlimits: {max_status_requests: 13}\n",
	})
	set, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ex, ok := set.Get("child")
	if !ok || ex.Spec().Limits.MaxStatusRequests != 30 || ex.Spec().Status.URL != "https://gw.example.com/v1/batches/{job_id}" {
		t.Fatalf("child: %v %+v", ok, ex)
	}
	if ex, _ := set.Get("openai-batch"); ex.Spec().Limits.MaxStatusRequests != 13 {
		t.Fatal("a loaded file named openai-batch does not win over the built-in")
	}
	if c, err := Load(filepath.Join(dir, "child.yaml")); err != nil || c.Limits.MaxStatusRequests != 30 {
		t.Fatalf("Load finds a sibling base: %v", err)
	}

	cyc := tempFiles(t, map[string]string{
		"a.yaml": "version: 1\nextends: b\nname: a\n",
		"b.yaml": "version: 1\nextends: a\nname: b\n",
	})
	_, err = LoadDir(cyc)
	if err == nil || !strings.Contains(err.Error(), "extends: cycle: a → b → a") {
		t.Fatalf("LoadDir of a cycle = %v", err)
	}
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("%T is not a *Problems", err)
	}
}

// TestSetFindsBuiltins: a name no loaded file has finds the built-in.
func TestSetFindsBuiltins(t *testing.T) {
	set, err := LoadDir(tempFiles(t, map[string]string{"team.yaml": "version: 1\nextends: openai-batch\nname: team\n"}))
	if err != nil {
		t.Fatal(err)
	}
	ex, ok := set.Get("openai-batch")
	if !ok || ex.Spec().BaseURL != "https://api.openai.com" {
		t.Fatalf("Get(openai-batch) = %v, %v", ex, ok)
	}
	if _, ok := set.Get("no-such"); ok {
		t.Fatal("Get of an unknown name succeeded")
	}
}
