package operations

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// ExtensionParams is an agent's request for more time or requests, as
// typed: the extra time as a duration ("15m", "0s").
type ExtensionParams struct {
	Caller              Caller
	ID                  string
	ExtraTime           string
	ExtraStatusRequests int
	Justification       string
}

// RequestExtension records an agent's request for more time or requests
// (R20). It grants nothing: the limits stay as they are until an approver
// decides. A request on a finished operation is a conflict, and nothing is
// written to its audit.
func (s *Service) RequestExtension(ctx context.Context, p ExtensionParams) (*pollwarden.Operation, pollwarden.ExtensionRequest, error) {
	ext, err := parseExtension(p)
	if err != nil {
		return nil, ext, err
	}
	if _, err := s.visible(ctx, p.Caller, p.ID); err != nil {
		return nil, ext, err
	}
	// The controller refuses a finished operation and retries while a
	// step holds the record.
	op, err := s.ctl.RequestExtension(ctx, p.ID, p.Caller.Actor, ext)
	if err != nil {
		return nil, ext, writeProblem(err, p.ID)
	}
	return op, ext, nil
}

// parseExtension reads an extension request as typed: the extra time as a
// duration ("15m", "0s"), the justification trimmed. Every problem is
// reported at once, each with its field.
func parseExtension(p ExtensionParams) (pollwarden.ExtensionRequest, error) {
	probs := &Problems{Kind: Invalid}
	d, err := time.ParseDuration(p.ExtraTime)
	badTime := err != nil || d < 0
	if badTime {
		probs.add("extra_time", "extra_time %s must be a non-negative duration such as 15m or 0s", display.Clip(p.ExtraTime))
		d = 0
	}
	ext := pollwarden.ExtensionRequest{ExtraTime: d, ExtraStatusRequests: p.ExtraStatusRequests, Justification: strings.TrimSpace(p.Justification)}
	for _, fp := range ext.Problems() {
		if badTime && fp.Field == "extra_time" {
			continue // said above, as typed
		}
		probs.add(fp.Field, "%s", fp.Message)
	}
	if err := probs.orNil(); err != nil {
		return pollwarden.ExtensionRequest{}, err
	}
	return ext, nil
}

// DecisionParams is a person's answer to an operation, as typed.
type DecisionParams struct {
	Caller Caller
	ID     string
	// Option is one of the escalation's options[].id (Decide); Cancel and
	// Abandon fill it in themselves.
	Option string
	Note   string
	// Escalation, when set, is the id of the question answered
	// (escalation.id): a decision on any other question is refused as a
	// conflict and changes nothing. Empty answers the open one.
	Escalation string
}

// MaxNote keeps a note readable as one line of the story. It counts
// characters (runes), as the console's maxlength does, so a note in any
// script has the same room.
const MaxNote = 2000

// maxEscalationID bounds an escalation id as typed ("esc-" and a count).
const maxEscalationID = 64

// Decide applies an approver's answer to an escalation (R20): who, when,
// the state, the calls made and the new limits are recorded. The
// operation must be escalated and offer the option (a cancel, and an
// abandon of a waiting operation, need no escalation), else a conflict
// that says why: the caller's view of it is out of date.
func (s *Service) Decide(ctx context.Context, p DecisionParams) (*pollwarden.Operation, error) {
	act := ActionDecide
	if p.Option == pollwarden.OptionCancel {
		act = ActionCancel
	}
	if err := p.Caller.May(act, nil, p.Option); err != nil {
		return nil, err
	}
	if p.Option == "" {
		return nil, refuse(Invalid, "option", "option is required: one of the escalation's options[].id")
	}
	return s.apply(ctx, p)
}

// Cancel runs the contract's cancel action (R23), an approver's
// decision: for a waiting operation at any time, an escalated one when
// its escalation offers it. The cancel is recorded before it is sent and
// sent once; the operation then keeps observing until the provider
// reports an end state.
func (s *Service) Cancel(ctx context.Context, p DecisionParams) (*pollwarden.Operation, error) {
	p.Option = pollwarden.OptionCancel
	return s.Decide(ctx, p)
}

// Abandon stops watching an operation: nothing is sent to the provider.
// It narrows authority, so an agent may do it to an operation it owns at
// any time, without an escalation first, and an approver to any
// operation; it is recorded like a decision. An agent that sees every
// operation (scope all) still stops only its own.
func (s *Service) Abandon(ctx context.Context, p DecisionParams) (*pollwarden.Operation, error) {
	p.Option = pollwarden.OptionAbandon
	op, err := s.visible(ctx, p.Caller, p.ID)
	if err != nil {
		return nil, err
	}
	if err := p.Caller.May(ActionAbandon, op, ""); err != nil {
		return nil, err
	}
	return s.apply(ctx, p)
}

// apply checks and applies a decision the caller's role allows.
func (s *Service) apply(ctx context.Context, p DecisionParams) (*pollwarden.Operation, error) {
	if utf8.RuneCountInString(p.Note) > MaxNote {
		return nil, refuse(Invalid, "note", "note is longer than %d characters", MaxNote)
	}
	op, err := s.visible(ctx, p.Caller, p.ID)
	if err != nil {
		return nil, err
	}
	if p.Option == pollwarden.OptionUseCurrentContract {
		return s.useCurrentContract(ctx, p, op)
	}
	ex, err := s.contractOf(ctx, op)
	if err != nil {
		return nil, err
	}
	if len(p.Escalation) > maxEscalationID {
		return nil, refuse(Invalid, "escalation", "escalation is longer than %d bytes; it is an escalation.id such as esc-3", maxEscalationID)
	}
	if err := offered(op, ex, p.Option, p.Escalation); err != nil {
		return nil, err
	}
	// The decision and a cancel call are not abandoned halfway when the
	// caller goes away: what was decided is recorded, with its action.
	// Whether the question is still open is checked again on the record
	// the decision is saved over, so of two answers to one question one
	// is saved and the other refused.
	next, err := s.ctl.Decide(context.WithoutCancel(ctx), ex, op.ID, policy.DecisionParams{Option: p.Option, Actor: p.Caller.Actor, Note: p.Note,
		Escalation: p.Escalation, CredentialChanged: p.Option == pollwarden.OptionRetryCredential && s.credentialChanged(op)})
	if err != nil {
		return nil, writeProblem(err, op.ID)
	}
	if p.Option == pollwarden.OptionRetryCredential {
		s.closeRefusedCredential(ctx, p, ex.Spec())
	}
	return next, nil
}

// offered says, as a conflict a person can act on, why option cannot be
// chosen for op now. policy.Apply and policy.RequestCancel check the same
// again under the save; a cancel, and a decision on a cancelling
// operation, are left to them, since they depend on the cancel's record.
func offered(op *pollwarden.Operation, ex *contract.Loaded, option, escalation string) error {
	if err := policy.CheckQuestion(op, escalation); err != nil {
		return refuse(Conflict, "escalation", "%s", pollwarden.RefusalText(err))
	}
	switch {
	case option == pollwarden.OptionCancel && ex.Spec().Cancel == nil:
		return refuse(Conflict, "option", "contract %s documents no cancel action, so cancel at provider is not offered", op.Contract)
	case option == pollwarden.OptionCancel, op.Phase == pollwarden.PhaseCancelling:
		return nil
	case option == pollwarden.OptionAbandon && op.Phase == pollwarden.PhaseWaiting:
		return nil // narrowing is allowed at any time
	case !op.Phase.AwaitsDecision() || op.Escalation == nil:
		if d := op.LastDecision; d != nil {
			return refuse(Conflict, "", "operation %s is %s, not escalated: already decided, %s", op.ID, op.Phase, policy.DecisionText(d))
		}
		return refuse(Conflict, "", "operation %s is %s, not escalated: there is no decision to make", op.ID, op.Phase)
	case option == pollwarden.OptionRetryCredential:
		return nil // judged on the credential as it reads now (policy.Apply)
	}
	var ids []string
	for _, o := range op.Escalation.Options {
		ids = append(ids, o.ID)
	}
	if slices.Contains(ids, option) {
		return nil
	}
	return refuse(Conflict, "option", "option %s is not offered for operation %s; choose one of %s", display.Clip(option), op.ID, strings.Join(ids, ", "))
}
