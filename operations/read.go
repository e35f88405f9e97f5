package operations

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// Reader runs the read use cases (Get, Events, List) over a store alone,
// for a door that only shows records (the CLI's ops list, audit show):
// the same rule of who sees what as every other door, without a
// controller or contracts.
type Reader struct {
	store pollwarden.Store
	// getenv and readFile read a credential where this process runs
	// (prober.ResolveSecret), to judge retry_credential at each read.
	getenv   func(string) (string, bool)
	readFile func(string) ([]byte, error)
}

// NewReader returns the read use cases over st; credentials are read
// from this process's environment and files.
func NewReader(st pollwarden.Store) *Reader {
	if st == nil {
		panic("operations.NewReader: a store is required")
	}
	return &Reader{store: st, getenv: os.LookupEnv, readFile: os.ReadFile}
}

// Get reads operation id for c; one c may not see is not found. An
// operation stopped by a refused credential offers retry_credential when
// the credential reads differently now.
func (s *Reader) Get(ctx context.Context, c Caller, id string) (*pollwarden.Operation, error) {
	op, err := s.visible(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return s.offer(op), nil
}

// credentialChanged reports whether the credential op's provider refused
// reads, here and now, as another secret (prober.CredentialChanged).
func (s *Reader) credentialChanged(op *pollwarden.Operation) bool {
	return prober.CredentialChanged(op.RefusedCredential, s.getenv, s.readFile)
}

// offer is op as a reader sees it: with retry_credential among its
// options when the refused credential has changed since (never stored).
func (s *Reader) offer(op *pollwarden.Operation) *pollwarden.Operation {
	if !policy.RetryCredentialOffered(op) {
		return op
	}
	return policy.OfferRetryCredential(op, s.credentialChanged(op))
}

// Events reads operation id's audit events, oldest first, for c.
func (s *Reader) Events(ctx context.Context, c Caller, id string) ([]pollwarden.Event, error) {
	if _, err := s.visible(ctx, c, id); err != nil {
		return nil, err
	}
	return s.store.EventList(ctx, id)
}

// ListParams is a list request as the door received it.
type ListParams struct {
	Caller Caller
	// Phase as typed; "" lists every phase.
	Phase string
	// Limit as typed; "" is the default (see List).
	Limit string
	// Contract, Reason and Text narrow the list in the store, before the
	// limit (pollwarden.ListParams): a person's search is never a page
	// cut down afterwards.
	Contract, Reason, Text string
	// Names spells each field as the door shows it ("--phase").
	Names map[string]string
}

// The bounds of a caller's list, so one request cannot pull a whole
// fleet's history through a door.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// List reads operations, newest first, filtered by phase and bounded. A
// caller that sees only its own operations lists only those; the store
// filters them, so the limit counts the caller's operations.
//
// The limit is 1 to 1000, 100 by default. A person at the store file
// (the CLI: local, not a tool), who could read it whole anyway, lists
// every operation by default, and "0" asks for all of them; an agent's
// tool keeps the bounds even on a local store, so an answer fits a
// model's context.
func (s *Reader) List(ctx context.Context, p ListParams) ([]*pollwarden.Operation, error) {
	lp, err := listParams(p)
	if err != nil {
		return nil, err
	}
	owner, ok := p.Caller.listOwner()
	if !ok {
		return []*pollwarden.Operation{}, nil
	}
	lp.Owner = owner
	ops, err := s.store.OperationList(ctx, lp)
	for i, op := range ops {
		ops[i] = s.offer(op)
	}
	return ops, err
}

// CheckList judges p as List does, without a store: a door that must not
// open its store for a bad request (the CLI) asks first.
func CheckList(p ListParams) error {
	_, err := listParams(p)
	return err
}

// listParams turns p's phase and limit into the store's filter, or
// refuses them, naming each bad one.
func listParams(p ListParams) (pollwarden.ListParams, error) {
	name := func(f string) string {
		if n, ok := p.Names[f]; ok {
			return n
		}
		return f
	}
	lp := pollwarden.ListParams{Phase: pollwarden.Phase(p.Phase), Limit: defaultListLimit,
		Contract: p.Contract, Reason: pollwarden.Reason(p.Reason), Text: p.Text}
	all := p.Caller.Local && !p.Caller.Tool
	if all {
		lp.Limit = 0
	}
	probs := &Problems{Kind: Invalid}
	if lp.Phase != "" && !lp.Phase.Known() {
		probs.add("phase", "%s %s: want waiting, cancelling, succeeded, failed, cancelled, expired or escalated", name("phase"), display.Clip(p.Phase))
	}
	if p.Limit != "" {
		n, err := strconv.Atoi(p.Limit)
		switch {
		case all && (err != nil || n < 0):
			probs.add("limit", "%s %s: want 0 (all) or more", name("limit"), display.Clip(p.Limit))
		case !all && (err != nil || n < 1 || n > maxListLimit):
			probs.add("limit", "%s %s: want 1 to %d", name("limit"), display.Clip(p.Limit), maxListLimit)
		}
		lp.Limit = n
	}
	return lp, probs.orNil()
}

// WaitParams is a request to hold the answer until the operation's phase
// changes or the time passes.
type WaitParams struct {
	Caller Caller
	ID     string
	// For is how long to hold at most; the door caps it (the API at 60 s,
	// MCP at 50 s) and says so in its own words.
	For time.Duration
}

// Wait answers operation id once its phase changes or p.For passes,
// whichever comes first; a finished operation answers at once. The caller
// is checked before the wait, so another agent's operation answers not
// found at once and cannot be timed by holding a wait on it. It returns
// ctx's error when the caller goes away first.
func (s *Service) Wait(ctx context.Context, p WaitParams) (*pollwarden.Operation, error) {
	if _, err := s.visible(ctx, p.Caller, p.ID); err != nil {
		return nil, err
	}
	op, err := s.o.Changes.WaitPhase(ctx, s.o.Clock, s.store, p.ID, p.For, s.o.Recheck)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, writeProblem(err, p.ID)
	}
	if !p.Caller.sees(op) { // an owner never changes; checked again all the same
		return nil, notFound(p.ID)
	}
	return s.withOffers(s.offer(op)), nil
}

// Follow steps operation id in this process until it is final (an
// outcome or an escalation), telling progress about once a second: the
// foreground wait of `pollwarden wait` and `submit`. It returns ctx's
// error, with the last record, when ctx ends first.
func (s *Service) Follow(ctx context.Context, c Caller, id string, progress controller.Progress) (*pollwarden.Operation, error) {
	op, err := s.visible(ctx, c, id)
	if err != nil {
		return nil, err
	}
	ex, err := s.contractOf(ctx, op)
	if err != nil {
		return nil, err
	}
	return s.ctl.Wait(ctx, ex, id, progress)
}

// Interrupted records in operation id's story that c's foreground wait
// stopped before an outcome (`pollwarden wait` interrupted), so the
// story says why nothing polled it since.
func (s *Service) Interrupted(ctx context.Context, c Caller, id, by string) error {
	if _, err := s.visible(ctx, c, id); err != nil {
		return err
	}
	return s.ctl.Interrupted(ctx, id, by)
}
