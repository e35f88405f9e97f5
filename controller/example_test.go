package controller_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// openAIStandIn is a loopback stand-in for api.openai.com: it answers a
// batch's status with OpenAI's own documented bodies (see
// contract/builtin/testdata/openai-batch/SOURCES.md), in progress twice,
// then completed, and refuses any other credential.
func openAIStandIn() *httptest.Server {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "contract", "builtin", "testdata", "openai-batch", name))
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	running, done := read("running.json"), read("succeeded.json")
	var calls atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-example-not-a-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body := running
		if calls.Add(1) >= 3 {
			body = done
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
}

// embedded is what a service sets up once: its store, its contracts and
// one controller over them.
type embedded struct {
	store *sqlite.Store
	ex    *contract.Loaded
	ctl   *controller.Controller
	clock *pollwarden.JumpClock
}

func setUp(ctx context.Context, dir, providerURL string) (*embedded, error) {
	// Your store: a SQLite file here; postgres.Open for a fleet; or your
	// own pollwarden.Store that passes the storetest suite.
	st, err := sqlite.Open(ctx, filepath.Join(dir, "pw.db"), sqlite.Options{})
	if err != nil {
		return nil, err
	}
	// Your contract: the built-in openai-batch, pointed at the stand-in
	// by one line. A file of your own loads with contract.LoadDir.
	c, err := contract.ParseFrom([]byte(`{version: 1, extends: openai-batch, name: openai-batch-local, base_url: "`+providerURL+`"}`),
		"example", contract.Builtins)
	if err != nil {
		return nil, err
	}
	ex, err := contract.Compile(c)
	if err != nil {
		return nil, err
	}
	// The controller gets what the service owns: the clock (one that jumps
	// when slept on, so the examples take no time; pollwarden.RealClock{}
	// in a service), the random source for jitter, and where credentials
	// come from (the store only ever sees the credential's name).
	clock := pollwarden.NewJumpClock(time.Date(2024, 3, 26, 17, 0, 0, 0, time.UTC))
	getenv := func(k string) (string, bool) { return "sk-example-not-a-secret", k == "OPENAI_API_KEY" }
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv})})
	return &embedded{store: st, ex: ex, ctl: ctl, clock: clock}, nil
}

// start runs the stand-in provider and sets up a service in a temporary
// directory; done ends both.
func start(ctx context.Context) (e *embedded, done func()) {
	provider := openAIStandIn()
	dir, err := os.MkdirTemp("", "pollwarden-example-")
	if err != nil {
		log.Fatal(err)
	}
	if e, err = setUp(ctx, dir, provider.URL); err != nil {
		log.Fatal(err)
	}
	return e, func() {
		e.store.Close()
		provider.Close()
		os.RemoveAll(dir)
	}
}

// Example runs one wait inside your own service: open a store, load a
// contract, create the operation, step it against the provider, read the
// outcome. Each Step sends at most one status request and says when the
// next one is due; a service's own scheduler (or package scheduler) calls
// it again then. Nothing is held between steps: another process sharing
// the store could take the next one.
func Example() {
	ctx := context.Background()
	e, done := start(ctx)
	defer done()

	// The record, with its deadline and budgets, is stored before any
	// request; the same id later resumes it, counters intact.
	op, err := e.ctl.Start(ctx, e.ex, policy.NewParams{ID: "batch-1", ProviderJobID: "batch_abc123", MaxStatusRequests: 10})
	if err != nil {
		log.Fatal(err)
	}
	for op.Phase.Polling() {
		res, err := e.ctl.Step(ctx, e.ex, op.ID)
		if err != nil {
			log.Fatal(err)
		}
		op = res.Op
		if !res.Until.IsZero() {
			e.clock.Sleep(ctx, res.Until.Sub(e.clock.Now()))
		}
	}
	fmt.Println(op.Phase, "after", op.StatusRequestsUsed, "of", op.MaxStatusRequests, "status requests")
	fmt.Println("result:", string(op.Result))
	fmt.Println("credential recorded as:", op.CredentialName)
	// Output:
	// succeeded after 3 of 10 status requests
	// result: {"output_file_id":"file-cvaTdG"}
	// credential recorded as: env:OPENAI_API_KEY
}

// ExampleController_Wait is the same wait in one call, the way `pollwarden
// wait` runs it, followed by the operation's story from the audit trail.
func ExampleController_Wait() {
	ctx := context.Background()
	e, done := start(ctx)
	defer done()

	op, err := e.ctl.Start(ctx, e.ex, policy.NewParams{ID: "batch-2", ProviderJobID: "batch_abc123", MaxStatusRequests: 10})
	if err != nil {
		log.Fatal(err)
	}
	final, err := e.ctl.Wait(ctx, e.ex, op.ID, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Phase, final.Phase.Finished())
	events, err := e.store.EventList(ctx, op.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range audit.Story(events, time.UTC) {
		fmt.Println(line)
	}
	// Output:
	// succeeded true
	// 2024-03-26 17:00:00 UTC started watching job batch_abc123, deadline 2024-03-27 18:00:00, budget 10 (max transport failures 5, max rate-limited answers 5)
	// 17:00:00 status request 1 of 10: state in_progress, next poll 17:00:47 from local backoff
	// 17:00:47 status request 2 of 10: state in_progress, next poll 17:02:23 from local backoff
	// 17:02:23 status request 3 of 10: state in_progress → completed
	// 17:02:23 succeeded after 3 of 10 status requests, 2m24s elapsed
}
