package operations

import (
	"context"
	"errors"
	"io"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
)

// ErrResultFailed is a result fetch that was sent and did not hand over a
// whole result (the provider's answer, the bound, the connection): not a
// refusal, so doors answer it as the provider's fault (a bad gateway).
var ErrResultFailed = controller.ErrResultFailed

// ResultParams asks for a succeeded operation's result.
type ResultParams struct {
	Caller Caller
	ID     string
}

// FetchResult streams operation id's result into w as its own recorded
// action (R23), bounded by the contract's max_bytes. Before anything is
// sent it is refused as a conflict (not succeeded yet, no result.fetch, a
// URL off the contract's origins); a fetch that fails once sent is
// ErrResultFailed, with res.Written telling whether any byte reached w.
// Once the contract's max_fetches were sent, a fetch is refused as
// Exhausted, recorded, and sends nothing.
func (s *Service) FetchResult(ctx context.Context, p ResultParams, w io.Writer) (controller.ResultFetch, error) {
	op, err := s.visible(ctx, p.Caller, p.ID)
	if err != nil {
		return controller.ResultFetch{}, err
	}
	ex, err := s.contractOf(ctx, op)
	if err != nil {
		return controller.ResultFetch{}, err
	}
	res, err := s.ctl.FetchResult(ctx, ex, op.ID, p.Caller.Actor, w)
	switch {
	case err == nil, errors.Is(err, controller.ErrResultFailed):
		return res, err
	case errors.Is(err, controller.ErrResultRefused):
		return res, refuse(Conflict, "", "%s", err.Error())
	case errors.Is(err, controller.ErrResultLimit):
		return res, refuse(Exhausted, "", "%s", err.Error())
	case errors.Is(err, pollwarden.ErrNotFound):
		return res, notFound(p.ID)
	}
	return res, err
}
