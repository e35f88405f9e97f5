package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func runSim(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"sim"}, args...), Env{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// TestSimJSONShape checks the fixed JSON fields external checks rely on.
func TestSimJSONShape(t *testing.T) {
	code, out, errs := runSim(t, "--scenario", "herd", "--n", "300", "--seed", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Scenario   string           `json:"scenario"`
		N          int              `json:"n"`
		Strategies []map[string]any `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Scenario != "herd" || rep.N != 300 {
		t.Errorf("scenario %q n %d", rep.Scenario, rep.N)
	}
	var names []string
	for _, s := range rep.Strategies {
		names = append(names, s["name"].(string))
		for _, k := range []string{"requests_per_job", "lag_p50_s", "lag_p99_s", "burstiness", "retry_after_violations", "stopped_by_limit"} {
			if _, ok := s[k].(float64); !ok {
				t.Errorf("%s: field %s missing or not a number: %v", s["name"], k, s[k])
			}
		}
	}
	if !slices.Equal(names, []string{"pollwarden", "fixed-10s", "full-jitter", "equal-jitter", "smithy-waiter", "k8s-backoff"}) {
		t.Errorf("strategies %v", names)
	}
	// Same seed, same bytes.
	if _, again, _ := runSim(t, "--scenario", "herd", "--n", "300", "--seed", "4", "--json"); again != out {
		t.Error("two runs with the same seed printed different JSON")
	}
}

func TestSimTable(t *testing.T) {
	code, out, errs := runSim(t, "--scenario", "outage", "--n", "400", "--experimental")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"scenario outage", "pollwarden-proposed", "smithy-waiter", "targets:", "retry_after_violations"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestSimBrooker(t *testing.T) {
	code, out, errs := runSim(t, "--scenario", "brooker", "--runs", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `"variant":"decorrelated"`) || !strings.Contains(out, `"ref_calls":2445`) {
		t.Errorf("brooker JSON: %s", out)
	}
}

// TestSimCallbackScenario: the callback scenario prints the same JSON
// fields with the loss it ran and the deaf reference beside them.
func TestSimCallbackScenario(t *testing.T) {
	code, out, errs := runSim(t, "--scenario", "callback", "--n", "300", "--callback-loss", "0.25", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Scenario   string           `json:"scenario"`
		Strategies []map[string]any `json:"strategies"`
		Params     struct {
			CallbackLoss *float64 `json:"callback_loss"`
		} `json:"params"`
		Without map[string]any `json:"pollwarden_without_callbacks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Scenario != "callback" || len(rep.Strategies) != 6 || rep.Params.CallbackLoss == nil || *rep.Params.CallbackLoss != 0.25 || rep.Without == nil {
		t.Errorf("report %+v", rep)
	}
}

func TestSimBadInputIsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario", "stampede"},
		{"--n", "0"},
		{"--n", "2000000"},
		{"--plot", "rate.pdf"},
		{"--strategies", "fixed-5s"},
		{"--scenario", "brooker", "--runs", "0"},
		{"--scenario", "callback", "--callback-loss", "1.5"},
		{"--scenario", "callback", "--callback-loss", "-1"},
		{"--scenario", "herd", "--callback-loss", "0.5"},
		{"--bogus"},
		{"extra-arg"},
	} {
		if code, _, _ := runSim(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
