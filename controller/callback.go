package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// callbackFanout bounds how many operations one callback may wake: one
// provider job is normally one operation, and a callback must not turn
// into an unbounded walk of the store.
const callbackFanout = 16

// Callback applies a verified provider callback ("job jobID ended") to the
// operations of contract ct with that provider job id: each waiting one is
// moved to one status request as soon as its gates allow (policy.Callback),
// saved with its audit event, and the scheduler told through OnChange. It
// returns how many were woken; an unknown job wakes none and is not an
// error, so the caller can answer alike and reveal nothing. The callback's
// body plays no part: the status request decides the outcome. Operations
// that are no longer waiting are read too: a callback arriving after a
// poll saw the end still tells the contract's callbacks came
// (callbackLedgers).
func (c *Controller) Callback(ctx context.Context, ct *pollwarden.ContractSpec, jobID string) (woken int, err error) {
	ops, err := c.store.OperationList(ctx, pollwarden.ListParams{
		Contract: ct.Name, ProviderJobID: jobID, Limit: callbackFanout,
	})
	if err != nil {
		return 0, err
	}
	for _, listed := range ops {
		if listed.Phase != pollwarden.PhaseWaiting {
			c.callbacks.do(ct.Name, func(l *policy.CallbackLedger) { l.Callback(listed, policy.CallbackWake{}) })
			continue
		}
		id := listed.ID
		op, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
			op, err := c.store.OperationGet(ctx, id)
			if err != nil {
				return nil, err
			}
			if policy.CheckContract(op, ct) != nil {
				return nil, nil // created under another version of the contract: leave it
			}
			now := c.clock.Now()
			w := policy.Callback(op, ct, now)
			if w.Woken {
				if err := c.save(ctx, w.Op, w.Events, now); err != nil {
					return nil, err
				}
			}
			c.callbacks.do(ct.Name, func(l *policy.CallbackLedger) { l.Callback(op, w) })
			if !w.Woken {
				return nil, nil
			}
			return w.Op, nil
		})
		switch {
		case errors.Is(err, pollwarden.ErrNotFound):
		case err != nil:
			return woken, err
		case op != nil:
			woken++
		}
	}
	return woken, nil
}

// callbackLedgers is what this process learned of each contract's
// callbacks (policy.CallbackLedger): whether they arrive reliably enough
// for a pending answer's next poll to be only a safety net. It lives in
// memory, per process: a restarted daemon starts untrusting and polls as
// without callbacks until the ends it sees show the callbacks come.
type callbackLedgers struct {
	mu sync.Mutex
	m  map[string]*policy.CallbackLedger
}

func (c *callbackLedgers) do(contract string, f func(*policy.CallbackLedger)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[contract]
	if l == nil {
		if c.m == nil {
			c.m = map[string]*policy.CallbackLedger{}
		}
		l = policy.NewCallbackLedger()
		c.m[contract] = l
	}
	f(l)
}

// decided feeds a step's answer to its contract's ledger and, while the
// contract's callbacks are trusted, makes a pending answer's next poll the
// safety net (policy.CallbackLedger.Hold). Contracts without a callback
// block are left alone.
func (c *Controller) decided(ct *pollwarden.ContractSpec, reserved *pollwarden.Operation, st policy.Step, now time.Time) policy.Step {
	if ct.Callback == nil {
		return st
	}
	c.callbacks.do(ct.Name, func(l *policy.CallbackLedger) {
		l.Polled(reserved, st.Op, now)
		if st.Op.Phase == pollwarden.PhaseWaiting {
			st = l.Hold(st, ct, now)
		}
	})
	return st
}

// heldForCallbacks reports whether op, due on a schedule chosen before
// its contract's callbacks were trusted, should wait for the safety net
// instead of being polled now (policy.CallbackLedger.HoldWaiting).
func (c *Controller) heldForCallbacks(ct *pollwarden.ContractSpec, op *pollwarden.Operation, now time.Time) (g policy.GateResult, held bool) {
	if ct.Callback == nil || op.Phase != pollwarden.PhaseWaiting {
		return g, false
	}
	c.callbacks.do(ct.Name, func(l *policy.CallbackLedger) { g, held = l.HoldWaiting(op, ct, now) })
	return g, held
}
