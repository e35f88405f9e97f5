package cli_test

import (
	"context"
	"math/rand/v2"
	"os"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/rogpeppe/go-internal/testscript"
)

// pastClock is a controller clock stopped at a time in the past.
type pastClock struct {
	pollwarden.WallTimers
	at time.Time
}

func (c pastClock) Now() time.Time                                   { return c.at }
func (c pastClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// cmdInterrupted plays a `wait` that was interrupted AGO ago after its
// first status request: `interrupted CONTRACT JOB OPERATION AGO` creates
// the operation in $POLLWARDEN_STORE with the real controller, sends one
// status request to the script's provider, and stops, leaving the
// operation waiting with its next check long past and no lease.
func cmdInterrupted(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: interrupted CONTRACT JOB OPERATION AGO")
	}
	ago, err := time.ParseDuration(args[3])
	ts.Check(err)
	ctx := context.Background()
	c, err := contract.Load(ts.MkAbs(args[0]))
	ts.Check(err)
	ex, err := contract.Compile(c)
	ts.Check(err)
	st, err := sqlite.Open(ctx, ts.Getenv("POLLWARDEN_STORE"), sqlite.Options{})
	ts.Check(err)
	defer st.Close()
	clock := pastClock{at: time.Now().Add(-ago)}
	getenv := func(k string) (string, bool) { v := ts.Getenv(k); return v, v != "" }
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv, ReadFile: os.ReadFile})})
	op, err := ctl.Start(ctx, ex, policy.NewParams{ID: args[2], ProviderJobID: args[1], Owner: "cli:script"})
	ts.Check(err)
	_, err = ctl.Step(ctx, ex, op.ID)
	ts.Check(err)
}
