package operations_test

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
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
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

// service builds what an embedding service builds once, as pollwarden's
// own commands do: a store, its contracts, and one operations.Service
// over a controller. Every action then goes through the Service, so the
// embedder gets the doors' rules (who may do what, the note limit, the
// bounds of a list), not the controller's alone.
func service(ctx context.Context, dir, providerURL string) (*operations.Service, *sqlite.Store, error) {
	// Your store: a SQLite file here; postgres.Open for a fleet.
	st, err := sqlite.Open(ctx, filepath.Join(dir, "pw.db"), sqlite.Options{})
	if err != nil {
		return nil, nil, err
	}
	// Your contract: the built-in openai-batch, pointed at the stand-in
	// by one line. A directory of files loads with contract.LoadDir,
	// whose *contract.Set is the Service's Contracts as it is.
	c, err := contract.ParseFrom([]byte(`{version: 1, extends: openai-batch, name: openai-batch-local, base_url: "`+providerURL+`"}`),
		"example", contract.Builtins)
	if err != nil {
		return nil, nil, err
	}
	ex, err := contract.Compile(c)
	if err != nil {
		return nil, nil, err
	}
	// The clock jumps when slept on, so the example takes no time
	// (pollwarden.RealClock{} in a service); the random source draws the
	// jitter; credentials are read at request time, by name.
	clock := pollwarden.NewJumpClock(time.Date(2024, 3, 26, 17, 0, 0, 0, time.UTC))
	getenv := func(k string) (string, bool) { return "sk-example-not-a-secret", k == "OPENAI_API_KEY" }
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv})})
	return operations.New(operations.Options{Controller: ctl, Contracts: operations.Only(ex), Clock: clock}), st, nil
}

// local is the embedding process as a caller: like the CLI, its authority
// is the store itself, so it sees every operation and records its own
// name as their owner.
var local = operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: "billing-service", Role: pollwarden.RoleAgent}},
	Local: true, Owner: "billing-service"}

// Example runs one wait inside your own service through the use cases:
// create the operation (its deadline and budgets are stored before any
// request; the same request later resumes it, counters intact), follow
// it in this process until it is final, read its story.
func Example() {
	ctx := context.Background()
	provider := openAIStandIn()
	defer provider.Close()
	dir, err := os.MkdirTemp("", "pollwarden-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ops, st, err := service(ctx, dir, provider.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	op, _, err := ops.Create(ctx, operations.CreateParams{Caller: local, CreateRequest: operations.CreateRequest{
		OperationID: "batch-1", Contract: "openai-batch-local", JobID: "batch_abc123", Deadline: "2h"}})
	if err != nil {
		log.Fatal(err)
	}
	final, err := ops.Follow(ctx, local, op.ID, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Phase, "after", final.StatusRequestsUsed, "status requests; owner", final.Owner)
	fmt.Println("result:", string(final.Result))
	fmt.Println("credential recorded as:", final.CredentialName)
	events, err := ops.Events(ctx, local, op.ID)
	if err != nil {
		log.Fatal(err)
	}
	lines := audit.Story(events, time.UTC)
	fmt.Println(lines[len(lines)-1])
	// Output:
	// succeeded after 3 status requests; owner billing-service
	// result: {"output_file_id":"file-cvaTdG"}
	// credential recorded as: env:OPENAI_API_KEY
	// 17:02:23 succeeded after 3 of 120 status requests, 2m24s elapsed
}

// ExampleCaller_May asks the one table of who may do what, as the API's
// guard and the console's buttons do: a service that serves its own users
// checks them the same way, with each user as the Caller.
func ExampleCaller_May() {
	agent := operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}}}
	approver := operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}}}
	theirs := &pollwarden.Operation{ID: "op-1", Owner: "someone-else"}
	fmt.Println(agent.May(operations.ActionDecide, theirs, pollwarden.OptionExtend))
	fmt.Println(agent.May(operations.ActionAbandon, theirs, ""))
	fmt.Println(approver.May(operations.ActionDecide, theirs, pollwarden.OptionExtend))
	// Output:
	// build-agent has the agent role: only an approver decides
	// operation op-1 belongs to someone-else; an agent may abandon only its own operations
	// <nil>
}
