package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// The two ways a result fetch ends without a result: refused before
// anything was sent (wrong phase, no result.fetch, a URL off the
// contract's origins), or failed once sent (the provider's answer, the
// bound, the connection). Doors answer the first as a conflict, the
// second as a bad gateway.
var (
	ErrResultRefused = errors.New("result fetch refused")
	ErrResultFailed  = errors.New("result fetch failed")
	// ErrResultLimit is a fetch refused because the operation has sent
	// every fetch its contract's max_fetches allows; it is recorded.
	ErrResultLimit = errors.New("result fetch limit reached")
)

// ResultFetch is what a completed fetch handed over.
type ResultFetch struct {
	URL    string
	Bytes  int64
	SHA256 string
	// Pages is how many answers a paged fetch read (0 when it streamed
	// one answer as it came).
	Pages int
	// Written is true once any byte reached the writer, also on failure:
	// a door streaming to a client can then only abort.
	Written bool
}

// fetchResult fetches operation id's result as its own recorded action
// (R23), streaming it into w, bounded by the contract's max_bytes. It is
// allowed only once the operation has succeeded. A "started" event (who,
// the URL) is durable before the request leaves, and a "fetched" (bytes,
// sha256) or "failed" event after; a second fetch is allowed and recorded
// the same way, up to the contract's max_fetches, after which a fetch is
// refused (and the refusal recorded) without sending anything. The record is written even if the caller goes away.
func (c *Controller) fetchResult(ctx context.Context, ex *contract.Loaded, id string, actor pollwarden.Actor, w io.Writer) (ResultFetch, error) {
	ct := ex.Spec()
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return ResultFetch{}, err
	}
	if err := policy.CanFetchResult(op, ct); err != nil {
		return ResultFetch{}, fmt.Errorf("%w: %v", ErrResultRefused, err)
	}
	pager, err := contract.NewResultPager(ct, op)
	if err != nil {
		return ResultFetch{}, fmt.Errorf("%w: %v", ErrResultRefused, err)
	}
	url, _, err := pager.Page("")
	if err != nil {
		return ResultFetch{}, fmt.Errorf("%w: %v", ErrResultRefused, err)
	}
	headers, err := contract.RequestHeaders(ct, op.ProviderJobID, op.Vars)
	if err != nil {
		return ResultFetch{}, fmt.Errorf("%w: %v", ErrResultRefused, err)
	}
	bg := context.WithoutCancel(ctx)
	shown := auditURL(url)
	// Counted in the same write as the started event, before the request
	// leaves: a crash or another door cannot send one more than allowed.
	sent, refusal, err := c.startFetch(bg, ctx, ct, id, actor, shown)
	if err != nil {
		return ResultFetch{}, err
	}
	if !sent {
		return ResultFetch{URL: shown}, fmt.Errorf("%w: %s", ErrResultLimit, refusal)
	}
	r := c.prober.Fetch(ctx, ct, prober.FetchRequest{Method: ct.ResultFetch.Method, Page: pager.Page, Headers: headers}, w)
	if r.Problem == "" && ctx.Err() != nil {
		r.Problem = "the caller went away before the result was handed over"
	}
	out := ResultFetch{URL: shown, Bytes: r.Bytes, SHA256: r.SHA256, Pages: r.Pages, Written: r.Written}
	if err := c.record(bg, id, func(op *pollwarden.Operation) pollwarden.Event {
		return policy.ResultFetchDone(op, actor, shown, policy.FetchOutcome{Status: r.Status, Bytes: r.Bytes, SHA256: r.SHA256, Pages: r.Pages, Problem: r.Problem}, c.clock.Now())
	}); err != nil {
		return out, err
	}
	if r.Problem != "" {
		return out, fmt.Errorf("%w: %s", ErrResultFailed, r.Problem)
	}
	return out, nil
}

// startFetch records a result fetch's start (or its refusal at the
// limit), counted, and takes the request from the key's shared quota in
// the same write (a claim whose lease is freed at once). A fetch the key
// holds records nothing and waits for its slot, within MaxQuotaWait and
// the caller's context wait; otherwise it is refused (ErrQuotaHeld).
func (c *Controller) startFetch(ctx, wait context.Context, ct *pollwarden.ContractSpec, id string, actor pollwarden.Actor, shown string) (sent bool, refusal string, err error) {
	for {
		var held *quotaHeld
		_, err = c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
			now := c.clock.Now()
			var events []pollwarden.Event
			take := quotaTake(ct, now, false, &held)
			grant := take.Grant
			take.Grant = func(ks *pollwarden.KeyState, op *pollwarden.Operation, at time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
				if !sent {
					held = nil // a refusal at the limit sends nothing
					return nil, pollwarden.KeyGrant{OK: true}
				}
				return grant(ks, op, at)
			}
			saved, l, err := c.store.OperationClaim(ctx, pollwarden.ClaimParams{
				OperationID: id, Owner: c.owner, Now: now, TTL: c.leaseTTL(ct),
				Change: func(fresh *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
					var e pollwarden.Event
					e, sent = policy.StartResultFetch(fresh, ct, actor, shown, now)
					refusal, events = e.Data.Detail, []pollwarden.Event{e}
					return fresh, events
				},
				Quota: take,
			})
			if l != nil {
				c.changed(saved, events)
				err = c.store.LeaseRelease(ctx, l)
			}
			return saved, err
		})
		if err != nil || held == nil {
			return sent, refusal, err
		}
		if err := c.waitQuota(wait, held, "the result fetch", pollwarden.QuotaKey(ct)); err != nil {
			return false, "", err
		}
	}
}

// record appends one event to the operation without changing its state,
// retrying while a step holds its lease or another write got there first.
func (c *Controller) record(ctx context.Context, id string, event func(*pollwarden.Operation) pollwarden.Event) error {
	_, err := c.retryBusy(ctx, func() (*pollwarden.Operation, error) {
		op, err := c.store.OperationGet(ctx, id)
		if err != nil {
			return nil, err
		}
		e := event(op)
		return op, c.save(ctx, op, []pollwarden.Event{e}, e.At)
	})
	return err
}

// auditURL is the fetch URL as the record keeps it: without its query and
// fragment, which for a presigned download are themselves a credential.
func auditURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}
