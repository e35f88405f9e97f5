package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// Lookup finds the contract an operation was created under, by name.
type Lookup func(name string) (*contract.Loaded, bool)

// DecisionTick records every reminder and expiry due now across the
// escalated operations (policy.DecisionClock says which), and returns
// when the next one falls due (zero: none known). An expiry is recorded as
// its own event and its default then applied through Decide, as a
// decision of policy.ExpiryActor, so the story and the notifications say
// that nobody answered. Time is the store's when it has a clock of its own
// (decisionNow); the time returned is on that clock.
func (c *Controller) DecisionTick(ctx context.Context, lookup Lookup) (time.Time, error) {
	ops, err := c.store.OperationList(ctx, pollwarden.ListParams{Phase: pollwarden.PhaseEscalated})
	if err != nil {
		return time.Time{}, err
	}
	now, err := c.decisionNow(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	var errs []error
	for _, op := range ops {
		ex, ok, kerr := c.kept.Of(ctx, op)
		if kerr == nil && !ok {
			ex, ok = lookup(op.Contract) // a record from before contracts were kept
		}
		if !ok || policy.CheckContract(op, ex.Spec()) != nil {
			// Without the contract it was created under, no default can be
			// applied (a person's decision is refused the same way): the
			// request waits for the contract to come back.
			continue
		}
		due := policy.DecisionClock(op, ex.Spec().Escalation, now)
		var err error
		switch {
		case due.Expire:
			err = c.expireDecision(ctx, ex, op.ID)
		case due.Reminder > 0:
			err = c.remindDecision(ctx, ex, op.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("operation %s: %w", op.ID, err))
		}
		if !due.Expire && !due.Next.IsZero() && (next.IsZero() || due.Next.Before(next)) {
			next = due.Next
		}
	}
	return next, errors.Join(errs...)
}

// remindDecision records one reminder, if one is still due on the record
// as it is now.
func (c *Controller) remindDecision(ctx context.Context, ex *contract.Loaded, id string) error {
	spec := ex.Spec().Escalation
	_, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		now, err := c.decisionNow(ctx)
		if err != nil {
			return nil, err
		}
		due := policy.DecisionClock(op, spec, now)
		if due.Reminder == 0 || due.Expire {
			return op, nil
		}
		next, events := policy.Remind(op, spec, due.Reminder, now)
		return next, c.save(ctx, next, events, now)
	})
	return err
}

// expireDecision records the expiry and applies the contract's default
// with policy.Apply, the function a person's decision goes through, in one
// write, so no other decision can come between them. A cancel is the
// exception: its call to the provider is Cancel's own recorded action, so
// the expiry is written first and Decide sends the cancel after. A person
// who decides first wins: the record is then no longer escalated and
// nothing is done.
func (c *Controller) expireDecision(ctx context.Context, ex *contract.Loaded, id string) error {
	ctx, span := c.startSpan(ctx, "pollwarden.decision", id, ex.Spec().Name, trace.SpanKindInternal)
	span.SetAttributes(attrExpired.Bool(true))
	op, err := c.expireOnce(ctx, ex, id)
	endSpan(span, op, err)
	return err
}

func (c *Controller) expireOnce(ctx context.Context, ex *contract.Loaded, id string) (*pollwarden.Operation, error) {
	ct := ex.Spec()
	cancel := false
	op, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		cancel = false
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := policy.CheckContract(op, ct); err != nil {
			return nil, err
		}
		now, err := c.decisionNow(ctx)
		if err != nil {
			return nil, err
		}
		if !policy.DecisionClock(op, ct.Escalation, now).Expire {
			return nil, nil
		}
		opt := policy.ExpiryOption(op, ct.Escalation)
		next, events := op, []pollwarden.Event(nil)
		if op.Escalation.ExpiredAt == nil {
			next, events = policy.Expire(op, ct.Escalation, now)
		}
		if opt == pollwarden.OptionCancel {
			cancel = true
			if len(events) == 0 {
				return next, nil
			}
			return next, c.save(ctx, next, events, now)
		}
		after, more, err := policy.Apply(next, ct, policy.DecisionParams{Option: opt, Actor: policy.ExpiryActor()}, now)
		if err != nil {
			return nil, err
		}
		return after, c.save(ctx, after, append(events, more...), now)
	})
	if err != nil || !cancel {
		return op, err
	}
	after, err := c.Decide(ctx, ex, id, policy.DecisionParams{Option: pollwarden.OptionCancel, Actor: policy.ExpiryActor()})
	if errors.Is(err, pollwarden.ErrInvalid) {
		// A person decided between the two writes: theirs stands.
		return op, nil
	}
	return after, err
}

// RunDecisionClock runs DecisionTick until ctx ends: at the next due time,
// at least every poll (a new escalation or a reloaded contract brings
// earlier times), so a stopped daemon catches up when it is back.
func (c *Controller) RunDecisionClock(ctx context.Context, lookup Lookup, poll time.Duration, log *slog.Logger) error {
	for {
		next, err := c.DecisionTick(ctx, lookup)
		if err != nil && ctx.Err() == nil {
			log.Error("decision reminders and expiries", "error", err.Error())
		}
		wait := poll
		if now, nerr := c.decisionNow(ctx); !next.IsZero() && nerr == nil {
			wait = min(poll, max(next.Sub(now), 0))
		}
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return nil
		}
	}
}

// decisionNow is the time a decision request is judged at: the store's
// clock when it has one shared by every replica (PostgreSQL), the
// controller's otherwise. An escalation's time is compared with it, and
// the looping replica's own clock may run ahead of the one that wrote it.
func (c *Controller) decisionNow(ctx context.Context) (time.Time, error) {
	if sc, ok := c.store.(pollwarden.StoreClock); ok {
		return sc.StoreNow(ctx)
	}
	return c.clock.Now(), nil
}
