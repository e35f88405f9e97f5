package builtin_test

import (
	"context"
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

// TestReplaySubmissions: each built-in with a submit block submits
// against its provider's own create answer (the fixture named create),
// records the job (and the status location) it names, then polls that
// job to its end. The create fixture's .meta.json gives its status code
// and headers.
func TestReplaySubmissions(t *testing.T) {
	for _, tc := range []struct {
		name, create, done, path, job, body string
		vars                                map[string]string
		// origin is the provider's origin in the create answer's
		// headers, served here from loopback; statusAt is where the
		// status request must go when the answer names no job id.
		origin, statusAt string
	}{
		{"openai-batch", "pending", "succeeded", "/v1/batches", "batch_abc123",
			`{"input_file_id":"file-abc123","endpoint":"/v1/chat/completions","completion_window":"24h"}`, nil, "", ""},
		{"anthropic-message-batch", "pending", "succeeded", "/v1/messages/batches", "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
			`{"requests":[{"custom_id":"my-first-request","params":{"model":"claude-3-5-sonnet-20241022","max_tokens":1024,"messages":[{"role":"user","content":"Hello, world"}]}}]}`, nil, "", ""},
		{"replicate-prediction", "create", "succeeded", "/v1/predictions", "azaq55dbukgxg6kubr4k6g3pby",
			`{"version":"a00d0b7dcbb9c3fbb34ba87d2d5b46c56969c84a628bf778a7fdaec30b1b99c5","input":{"prompt":"a studio photo of a rainbow colored corgi","width":512,"height":512,"seed":42069}}`, nil, "", ""},
		{"assemblyai-transcript", "pending", "succeeded", "/v2/transcript", "TRANSCRIPT_ID",
			`{"audio_url":"https://example.com/wildfires.mp3"}`, nil, "", ""},
		{"azure-operation", "create", "lowercase_succeeded", "/language/analyze-documents/jobs", "",
			`{"displayName":"Document Extractive Summarization Task Example","analysisInput":{"documents":[{"location":"https://myaccount.blob.core.windows.net/sample-input/input.pdf","language":"en-US","id":"doc_0"}]},"tasks":[{"kind":"ExtractiveSummarization","taskName":"Document Extractive Summarization Task 1"}]}`,
			map[string]string{"submit_path": "language/analyze-documents/jobs", "api_version": "2024-11-15-preview"},
			"https://{your-language-resource-endpoint}", "/language/analyze-documents/jobs/f1cc29ff-9738-42ea-afa5-98d2d3cabf94?api-version=2024-11-15-preview"},
		{"azure-arm-async", "create", "succeeded", "/subscriptions/azure_subscription_id/resourceGroups/myjstest/providers/Microsoft.DocumentDB/databaseAccounts/myaccountxxx/mongodbDatabases/mydatabasexxxx3", "",
			`{"location":"eastus","properties":{"resource":{"id":"mydatabasexxxx3"},"options":{"throughput":2000}}}`,
			map[string]string{"resource_path": "subscriptions/azure_subscription_id/resourceGroups/myjstest/providers/Microsoft.DocumentDB/databaseAccounts/myaccountxxx/mongodbDatabases/mydatabasexxxx3", "api_version": "2021-07-01-preview"},
			"https://management.azure.com", "/subscriptions/azure_subscription_id/providers/Microsoft.DocumentDB/locations/eastus/operationsStatus/0bafb224-756f-47da-96e3-a650f1807be8?api-version=2021-07-01-preview"},
		{"google-lro", "pending", "succeeded", "/v1/projects/example-project/locations/us-central1/clusters", "projects/example-project/locations/us-central1/operations/operation-example",
			`{"shardCount":3,"pscConfigs":[{"network":"projects/example-project/global/networks/default"}]}`,
			map[string]string{"start_path": "projects/example-project/locations/us-central1/clusters"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.name)
			create := loadAnswer(t, dir, tc.create)
			done, err := os.ReadFile(filepath.Join(dir, tc.done+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			posts := 0
			var gets []string
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method != http.MethodGet {
					mu.Lock()
					posts++
					mu.Unlock()
					if r.URL.Path != tc.path {
						w.WriteHeader(http.StatusNotFound)
						return
					}
					for k, v := range create.header {
						// A status location names the provider's own host
						// (or a placeholder): here it is this server.
						if tc.origin != "" {
							v = strings.Replace(v, tc.origin, srv.URL, 1)
						}
						w.Header().Set(k, v)
					}
					w.WriteHeader(create.status)
					_, _ = w.Write(create.body)
					return
				}
				mu.Lock()
				gets = append(gets, r.URL.RequestURI())
				mu.Unlock()
				_, _ = w.Write(done)
			}))
			defer srv.Close()
			c, err := contract.Parse([]byte(fmt.Sprintf("version: 1\nextends: %s\nname: %s\nbase_url: %q\n", tc.name, tc.name, srv.URL)))
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
			defer st.Close()
			clock := &fakeClock{now: time.Now().UTC()}
			getenv := func(string) (string, bool) { return replayToken, true }
			ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
				Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv})})
			op, err := ctl.SubmitJob(context.Background(), ex, policy.NewParams{ID: "op-submit", Vars: tc.vars}, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if op.Phase != pollwarden.PhaseWaiting || op.ProviderJobID != tc.job || op.Submission.IdempotencyKey != "" {
				t.Fatalf("after the create answer: phase %s job %q key %q (%+v)", op.Phase, op.ProviderJobID, op.Submission.IdempotencyKey, op.Escalation)
			}
			final, err := ctl.Wait(context.Background(), ex, op.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if final.Phase != pollwarden.PhaseSucceeded || posts != 1 {
				t.Fatalf("final %s/%s after %d submissions", final.Phase, final.Reason, posts)
			}
			// The status request goes to the job the answer named: its id
			// under status.url, or the status location it gave.
			want := tc.job
			if want == "" {
				want = tc.statusAt
			}
			if len(gets) == 0 || !strings.Contains(gets[0], want) {
				t.Fatalf("status requests %q, want one for %s", gets, want)
			}
		})
	}
}
