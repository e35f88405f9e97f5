package policy

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// CanFetchResult refuses a result fetch unless op has succeeded: before
// then the provider has no result, and after another end there is none to
// fetch. The refusal names the phase.
func CanFetchResult(op *pollwarden.Operation, c *pollwarden.ContractSpec) error {
	if op.Contract != c.Name {
		return fmt.Errorf("operation %s belongs to contract %q, not %q", op.ID, op.Contract, c.Name)
	}
	if op.Phase != pollwarden.PhaseSucceeded {
		return fmt.Errorf("operation %s is %s; its result can be fetched only once it has succeeded", op.ID, op.Phase)
	}
	if c.ResultFetch == nil {
		return fmt.Errorf("contract %s documents no result fetch; the operation's result fields are its whole result", c.Name)
	}
	return nil
}

// StartResultFetch counts one more result fetch on op before it is sent,
// and returns the event that records it: who asked, and where it goes (a
// URL with no secret in it). Once the contract's max_fetches were sent,
// nothing is counted and the event records the refusal instead; sent is
// then false and nothing may leave.
func StartResultFetch(op *pollwarden.Operation, c *pollwarden.ContractSpec, actor pollwarden.Actor, url string, now time.Time) (e pollwarden.Event, sent bool) {
	limit := c.ResultFetch.FetchLimit()
	d := pollwarden.EventData{Actor: &actor, URL: url}
	if op.ResultFetchesSent >= limit {
		d.Detail = FetchLimitReached(op, limit)
		return pollwarden.Event{OperationID: op.ID, At: now, Kind: pollwarden.EventResultFetchRefused, Data: d}, false
	}
	op.ResultFetchesSent++
	d.Detail = fmt.Sprintf("result fetch %d of %d", op.ResultFetchesSent, limit)
	return pollwarden.Event{OperationID: op.ID, At: now, Kind: pollwarden.EventResultFetchStarted, Data: d}, true
}

// FetchLimitReached says why a result fetch was refused: every fetch the
// contract allows for op was sent.
func FetchLimitReached(op *pollwarden.Operation, limit int) string {
	return fmt.Sprintf("operation %s has sent its %d of %d result fetches (result.fetch.max_fetches); nothing sent. Fetch it once to a file (pollwarden result %s --out FILE) and keep that copy",
		op.ID, op.ResultFetchesSent, limit, op.ID)
}

// FetchOutcome is how a result fetch ended, as the record keeps it.
type FetchOutcome struct {
	Status int
	Bytes  int64
	SHA256 string
	// Pages is how many answers a paged fetch read.
	Pages int
	// Problem is why nothing whole was handed over, "" when it was.
	Problem string
}

// ResultFetchDone is the event written after the fetch: the size, pages
// and digest of what was handed over, or why nothing whole was.
func ResultFetchDone(op *pollwarden.Operation, actor pollwarden.Actor, url string, o FetchOutcome, now time.Time) pollwarden.Event {
	d := pollwarden.EventData{Actor: &actor, URL: url, HTTPStatus: o.Status, Bytes: o.Bytes, Pages: o.Pages}
	kind := pollwarden.EventResultFetched
	if o.Problem != "" {
		kind = pollwarden.EventResultFetchFailed
		d.Detail = o.Problem
	} else {
		d.SHA256 = o.SHA256
	}
	return pollwarden.Event{OperationID: op.ID, At: now, Kind: kind, Data: d}
}
