package builtin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// resultsJSONL stands for a results file. It is written for this test in
// the documented line shapes (OpenAI's BatchRequestOutput, Anthropic's
// custom_id/result lines), not captured from a provider.
const resultsJSONL = `{"custom_id":"request-1","result":{"type":"succeeded"}}
{"custom_id":"request-2","result":{"type":"errored"}}
`

// succeededRig moves built-in name to base by base_url and waits, through
// the real controller and SQLite store, until job's operation "op" has
// succeeded.
func succeededRig(t *testing.T, name, base, job string) (*controller.Controller, *contract.Loaded, *sqlite.Store) {
	t.Helper()
	c, err := contract.Parse(fmt.Appendf(nil, "version: 1\nextends: %s\nname: %s\nbase_url: %q\n", name, name, base))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{now: time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)}
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: func(string) (string, bool) { return replayToken, true }})})
	if _, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: "op", ProviderJobID: job}); err != nil {
		t.Fatal(err)
	}
	if op, err := ctl.Wait(context.Background(), ex, "op", nil); err != nil || op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("wait: %v %v", op, err)
	}
	return ctl, ex, st
}

// fetchBuiltin replays a built-in's success fixture (status at base_url,
// rewritten by rewrite), then fetches the result through result.fetch
// from a server that answers resultPath with resultsJSONL.
func fetchBuiltin(t *testing.T, name, job, resultPath string, rewrite func(body, base string) string) (controller.ResultFetch, error, []*http.Request) {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("testdata", name, "succeeded.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fetches []*http.Request
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == resultPath {
			mu.Lock()
			fetches = append(fetches, r.Clone(context.Background()))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/binary")
			fmt.Fprint(w, resultsJSONL)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, rewrite(string(status), srv.URL))
	}))
	t.Cleanup(srv.Close)
	ctl, ex, _ := succeededRig(t, name, srv.URL, job)
	var out bytes.Buffer
	res, err := ctl.FetchResult(context.Background(), ex, "op", pollwarden.Actor{Name: "t", Role: pollwarden.RoleAgent}, &out)
	if err == nil && out.String() != resultsJSONL {
		t.Fatalf("fetched %q", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return res, err, fetches
}

func TestOpenAIBatchFetchesItsOutputFile(t *testing.T) {
	res, err, fetches := fetchBuiltin(t, "openai-batch", "batch_abc123", "/v1/files/file-cvaTdG/content",
		func(body, _ string) string { return body })
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(resultsJSONL))
	if res.SHA256 != hex.EncodeToString(sum[:]) || len(fetches) != 1 || fetches[0].Header.Get("Authorization") != "Bearer "+replayToken {
		t.Fatalf("res %+v, %d fetches", res, len(fetches))
	}
}

func TestAnthropicBatchFetchesResultsURL(t *testing.T) {
	const path = "/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results"
	// The fixture's results_url names api.anthropic.com; served from a
	// local base_url it is another origin, so it is refused, unsent.
	_, err, fetches := fetchBuiltin(t, "anthropic-message-batch", "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF", path,
		func(body, _ string) string { return body })
	if !errors.Is(err, controller.ErrResultRefused) || !strings.Contains(err.Error(), "not an allowed origin") || len(fetches) != 0 {
		t.Fatalf("results_url on another origin: %v, %d fetches", err, len(fetches))
	}
	// Pointing at the contract's origin, it is fetched with the batch
	// API's headers.
	res, err, fetches := fetchBuiltin(t, "anthropic-message-batch", "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF", path,
		func(body, base string) string { return strings.ReplaceAll(body, "https://api.anthropic.com", base) })
	if err != nil {
		t.Fatal(err)
	}
	if len(fetches) != 1 || fetches[0].Header.Get("x-api-key") != replayToken || fetches[0].Header.Get("anthropic-version") == "" || res.Bytes != int64(len(resultsJSONL)) {
		t.Fatalf("res %+v, fetches %v", res, fetches)
	}
}
