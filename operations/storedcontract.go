package operations

import (
	"context"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// contractOf is the contract op runs under, as its store keeps it: every
// door acts on an existing operation with that one, whatever file of its
// name this process loaded. An operation created before contracts were
// kept has none stored; it falls back to the loaded contract of its name,
// which the controller checks against the digests on its record.
func (s *Service) contractOf(ctx context.Context, op *pollwarden.Operation) (*contract.Loaded, error) {
	ex, ok, err := s.ctl.Kept().Of(ctx, op)
	if err != nil {
		return nil, err
	}
	if ok {
		return ex, nil
	}
	ex, ok = s.o.Contracts.Get(op.Contract)
	if !ok {
		return nil, refuse(Conflict, "", "operation %s was created before pollwarden kept each operation's contract, and contract %s is not loaded now: load it (--contract FILE, or POLLWARDEN_CONTRACTS)", op.ID, op.Contract)
	}
	return ex, nil
}

// currentDiffers is the loaded contract of op's name when it differs
// from the one op runs under, with what differs; nil when it is the same,
// not loaded, or op has no stored contract (it then runs under the loaded
// one anyway).
func (s *Service) currentDiffers(op *pollwarden.Operation) (*contract.Loaded, policy.ContractChange) {
	if op.ContractFingerprint == "" {
		return nil, policy.ContractChange{}
	}
	ex, ok := s.o.Contracts.Get(op.Contract)
	if !ok || ex.Spec().Name != op.Contract {
		return nil, policy.ContractChange{}
	}
	ch := policy.CompareDigests(op, ex.Spec(), s.contractDigest(ex.Spec()))
	if !ch.Changed() {
		return nil, ch
	}
	return ex, ch
}

// offerCurrentContract adds use_current_contract to op's options (op is a
// copy the caller owns) when it is escalated and the loaded contract of
// its name differs from the one it runs under: judged when op is read, so
// a contract loaded later is offered at once.
func (s *Service) offerCurrentContract(op *pollwarden.Operation) {
	if op.Phase != pollwarden.PhaseEscalated || op.Escalation == nil {
		return
	}
	ex, _ := s.currentDiffers(op)
	if ex == nil {
		return
	}
	for _, o := range op.Escalation.Options {
		if o.ID == pollwarden.OptionUseCurrentContract {
			return
		}
	}
	if opt := policy.UseContractOption(op, ex.Spec()); opt != nil {
		op.Escalation.Options = append(op.Escalation.Options, *opt)
	}
}

// useCurrentContract moves op onto the loaded contract of its name at an
// approver's word: offered on an escalated operation, and accepted on a
// waiting one.
func (s *Service) useCurrentContract(ctx context.Context, p DecisionParams, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	if p.Caller.Tool || !p.Caller.Role.CanGrant() {
		return nil, refuse(Forbidden, "option", "%s grants new authority; only an approver may choose it", pollwarden.OptionUseCurrentContract)
	}
	if op.Phase != pollwarden.PhaseWaiting && op.Phase != pollwarden.PhaseEscalated {
		return nil, refuse(Conflict, "option", "operation %s is %s: only a waiting or escalated operation can move to another contract", op.ID, op.Phase)
	}
	if op.ContractFingerprint == "" {
		return nil, refuse(Conflict, "option", "operation %s was created before pollwarden kept each operation's contract: it already runs under the loaded contract %s", op.ID, display.Value(op.Contract))
	}
	ex, _ := s.currentDiffers(op)
	if ex == nil {
		if _, loaded := s.o.Contracts.Get(op.Contract); !loaded {
			return nil, refuse(Conflict, "option", "contract %s is not loaded here, so there is no current contract to take up", display.Value(op.Contract))
		}
		return nil, refuse(Conflict, "option", "the contract %s loaded here is the one operation %s runs under: there is nothing to take up", display.Value(op.Contract), op.ID)
	}
	next, err := s.ctl.UseContract(context.WithoutCancel(ctx), op.ID, ex, policy.DecisionParams{Option: p.Option, Actor: p.Caller.Actor, Note: p.Note})
	if err != nil {
		return nil, writeProblem(err, op.ID)
	}
	return next, nil
}

// Get is Reader.Get with the options judged when an operation is read
// (use_current_contract) added to its escalation.
func (s *Service) Get(ctx context.Context, c Caller, id string) (*pollwarden.Operation, error) {
	op, err := s.Reader.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return s.withOffers(op), nil
}

// withOffers is op, or a copy of it with the options judged at read time.
func (s *Service) withOffers(op *pollwarden.Operation) *pollwarden.Operation {
	if op.Phase != pollwarden.PhaseEscalated || op.ContractFingerprint == "" {
		return op
	}
	if ex, _ := s.currentDiffers(op); ex == nil {
		return op
	}
	op = op.Clone()
	s.offerCurrentContract(op)
	return op
}

// Resumes reports whether p names only an operation id: no contract, no
// job, no status URL and no submission. Such a request resumes the stored
// operation under the contract it runs under (ResumeStored).
func (p CreateParams) Resumes() bool {
	return p.OperationID != "" && p.Contract == "" && p.JobID == "" && p.StatusURL == "" && p.Submit == nil
}

// ResumeStored resumes operation p.OperationID as it was created: its
// contract as stored, its job, status URL, variables and (for a
// submission) body, counters intact (R11). No contract file is needed.
// The request then goes through Create, so a finished or escalated
// operation is read as it is, and a credential missing here is refused as
// for any create. An operation created before contracts were kept falls
// back to the loaded contract of its name.
func (s *Service) ResumeStored(ctx context.Context, p CreateParams) (*pollwarden.Operation, error) {
	op, err := s.visible(ctx, p.Caller, p.OperationID)
	if err != nil {
		return nil, err
	}
	ex, err := s.contractOf(ctx, op)
	if err != nil {
		return nil, err
	}
	p.Contract, p.JobID, p.StatusURL, p.Vars = op.Contract, op.ProviderJobID, op.StatusURL, op.Vars
	if op.Submission != nil {
		p.JobID, p.StatusURL = "", ""
		p.Submit = &SubmitParams{Body: op.Submission.Body}
	}
	o := s.o
	o.Contracts = Only(ex)
	got, _, err := New(o).Create(ctx, p)
	return got, err
}

// ContractOf is the contract op runs under (the store's copy; for a
// record from before contracts were kept, the loaded one of its name),
// for a door that shows what it documents (the console's cancel button
// and provider link).
func (s *Service) ContractOf(ctx context.Context, op *pollwarden.Operation) (*contract.Loaded, error) {
	return s.contractOf(ctx, op)
}

// moveWords offers, in a refusal, the third way on for an operation whose
// store keeps its contract: resuming it as it is, or an approver moving it
// onto the loaded contract.
func moveWords(op *pollwarden.Operation) string {
	if op.ContractFingerprint == "" {
		return ""
	}
	return "; or resume it under the contract it was created with (pollwarden wait --operation-id " + op.ID +
		"), or have an approver move it onto the new contract (pollwarden decide " + op.ID + " " + pollwarden.OptionUseCurrentContract + " --contract FILE)"
}
