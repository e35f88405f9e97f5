package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/present"
)

// NewParams is what a caller asks for when handing a job over. Zero limits
// take the contract's defaults.
type NewParams struct {
	ID            string
	ProviderJobID string
	StatusURL     string
	// Vars are the contract's template variables for this job, already
	// checked (contract.OperationVars); they are recorded and fingerprinted.
	Vars map[string]string
	// Deadline, when set, is the workflow's deadline for this operation.
	Deadline             time.Time
	MaxStatusRequests    int
	MaxTransportFailures int
	// Priority is the operation's place in a shared quota's queue, 1 (most
	// urgent) to 9, already judged by the door's use case (who may ask for
	// which); 0 records the default.
	Priority int
	// MayRaise is true only when an approver creates the operation; then
	// limits above the contract's defaults are accepted (R20).
	MayRaise bool
	// Owner is recorded as the operation's owner (see
	// pollwarden.Operation.Owner); By, when set, is who asked, named in the
	// submitted event as in every later event an actor causes.
	Owner string
	By    *pollwarden.Actor
	// RequestDigest is kept on the record as given (see
	// pollwarden.Operation.RequestDigest); policy does not read it.
	RequestDigest string
	// Submission, when set, makes an operation whose job pollwarden
	// submits itself (NewSubmission): no job id is known yet, and the
	// record starts in PhaseSubmitting.
	Submission *pollwarden.Submission
	// Rand draws the operation's jitter factor (R5). Without it the record
	// is created without one, and its first decision draws it.
	Rand Rand
	// ContractDigest, when set, is ContractDigest(c) computed once by a
	// caller that builds several records from one contract (a create's
	// checks, then its record): the digest encodes every section of the
	// contract twice, which cost a create more than its store write.
	// Without it NewOperation computes it.
	ContractDigest map[string]string
}

// NewOperation builds the record that must be stored before the first
// status request (R4, R10): the deadline, every budget and the expected
// terminal states, with the credential by name only. Limits may be lowered
// freely; raising one above the contract's needs an approver, and none may
// pass pollwarden.MaxCount or a deadline pollwarden.MaxSpan away. The ids
// must be UTF-8 text: a door that decoded JSON has checked the raw bytes
// already, this catches the others (the command line).
func NewOperation(c *pollwarden.ContractSpec, p NewParams, now time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	var problems []ParamProblem
	lim := c.Limits
	deadline := now.Add(lim.Deadline)
	if !p.Deadline.IsZero() {
		switch {
		case !p.Deadline.After(now):
			problems = append(problems, ParamProblem{Field: "deadline",
				Message: fmt.Sprintf("deadline %s is not in the future", p.Deadline.UTC().Format(time.RFC3339))})
		case p.Deadline.Sub(now) > pollwarden.MaxSpan:
			problems = append(problems, ParamProblem{Field: "deadline",
				Message: fmt.Sprintf("deadline %s is more than %s (a year) from now, the most any deadline may be",
					p.Deadline.UTC().Format(time.RFC3339), pollwarden.ShortDuration(pollwarden.MaxSpan))})
		case p.Deadline.After(deadline) && !p.MayRaise:
			problems = append(problems, ParamProblem{Field: "deadline", AboveContract: true,
				Message: fmt.Sprintf("deadline %s is later than the contract's %s; only an approver may raise it",
					p.Deadline.UTC().Format(time.RFC3339), lim.Deadline)})
		default:
			deadline = p.Deadline
		}
	}
	maxReq := pickLimit(&problems, "max_status_requests", "max status requests", p.MaxStatusRequests, lim.MaxStatusRequests, p.MayRaise)
	maxFail := pickLimit(&problems, "max_transport_failures", "max transport failures", p.MaxTransportFailures, lim.MaxTransportFailures, p.MayRaise)
	if p.ProviderJobID == "" && p.StatusURL == "" && p.Submission == nil {
		problems = append(problems, ParamProblem{Field: "job_id", Message: "a job id or a status URL is required"})
	}
	if p.ID == "" {
		problems = append(problems, ParamProblem{Field: "operation_id", Message: "an operation id is required"})
	}
	for _, f := range []struct{ field, name, v string }{{"operation_id", "operation id", p.ID}, {"job_id", "job id", p.ProviderJobID}, {"status_url", "status URL", p.StatusURL}} {
		if err := pollwarden.CheckText(f.name, f.v); err != nil {
			problems = append(problems, ParamProblem{Field: f.field, Message: pollwarden.RefusalText(err)})
		}
	}
	if len(problems) > 0 {
		return nil, nil, &ParamsError{Problems: problems}
	}
	op := &pollwarden.Operation{
		ID: p.ID, Contract: c.Name, ProviderJobID: p.ProviderJobID, StatusURL: p.StatusURL,
		ExpectedTerminal: c.TerminalStates(), StartedAt: now, DeadlineAt: deadline,
		MaxStatusRequests: maxReq, MaxTransportFailures: maxFail, MaxRateLimited: lim.MaxRateLimited,
		NextPollAt: now, NextPollSource: pollwarden.DelayLocalBackoff, Phase: pollwarden.PhaseWaiting,
		RequestDigest: p.RequestDigest, Owner: p.Owner, Vars: maps.Clone(p.Vars), Priority: p.Priority,
	}
	if p.Rand != nil {
		op.JitterFactor = DrawFactor(p.Rand)
	}
	if !p.Deadline.IsZero() {
		bd := deadline
		op.BusinessDeadlineAt = &bd
	}
	if cr := c.Status.Credential; cr != nil {
		op.CredentialName = cr.Ref
	}
	op.Fingerprint = FingerprintVars(c, op.ProviderJobID, op.StatusURL, op.CredentialName, op.Vars)
	if p.Submission != nil {
		op.Submission = p.Submission.Clone()
		op.Phase = pollwarden.PhaseSubmitting
		op.Fingerprint = SubmitFingerprint(c, p.Submission.BodySHA256, op.CredentialName, op.Vars)
	}
	if op.ContractDigest = maps.Clone(p.ContractDigest); op.ContractDigest == nil {
		op.ContractDigest = ContractDigest(c)
	}
	op.ContractLimits = KeptLimits(c)
	dl := op.DeadlineAt
	detail := fmt.Sprintf("max transport failures %d, max rate-limited answers %d", maxFail, op.MaxRateLimited)
	if op.Priority != 0 {
		detail += fmt.Sprintf("; priority %d", op.Priority)
	}
	if len(op.Vars) > 0 {
		detail += "; " + VarsText(op.Vars)
	}
	ev := newEvent(op, now, pollwarden.EventSubmitted, pollwarden.EventData{
		ProviderJobID: op.ProviderJobID, DeadlineAt: &dl, MaxRequests: maxReq, Detail: detail,
		Actor: cloneActor(p.By),
	})
	return op, []pollwarden.Event{ev}, nil
}

// ParamsError is NewOperation's refusal: every problem of the request,
// each with its field and whether an approver's request would not have it,
// so that a door can tell them apart without reading the words. It is a
// pollwarden.ErrInvalid.
type ParamsError struct {
	Problems []ParamProblem
}

// ParamProblem is one problem of NewParams.
type ParamProblem struct {
	// Field is the request's field, as the API names it ("deadline",
	// "max_status_requests", "operation_id").
	Field   string
	Message string
	// AboveContract marks a limit above the contract's: only an approver
	// may raise it, so the same request made by one would be accepted.
	AboveContract bool
}

func (e *ParamsError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return pollwarden.ErrInvalid.Error() + ": " + strings.Join(msgs, "; ")
}

func (e *ParamsError) Unwrap() error { return pollwarden.ErrInvalid }

func cloneActor(a *pollwarden.Actor) *pollwarden.Actor {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// pickLimit is the operation's limit for a caller's ask: the contract's
// when none, the ask when it is positive, within pollwarden.MaxCount and
// (unless an approver asks) within the contract's.
func pickLimit(problems *[]ParamProblem, field, name string, asked, contract int, mayRaise bool) int {
	switch {
	case asked == 0:
		return contract
	case asked < 0:
		*problems = append(*problems, ParamProblem{Field: field, Message: fmt.Sprintf("%s must be positive, got %d", name, asked)})
	case asked > pollwarden.MaxCount:
		*problems = append(*problems, ParamProblem{Field: field, Message: fmt.Sprintf("%s %d is above %d, the most any operation may have", name, asked, pollwarden.MaxCount)})
	case asked > contract && !mayRaise:
		*problems = append(*problems, ParamProblem{Field: field, AboveContract: true,
			Message: fmt.Sprintf("%s %d is above the contract's %d; only an approver may raise it", name, asked, contract)})
	}
	return asked
}

// Fingerprint identifies the original request: contract, status call,
// job and credential name (never the secret). A resume whose fingerprint
// differs would poll another job and is refused (R4).
func Fingerprint(c *pollwarden.ContractSpec, jobID, statusURL, credential string) string {
	return FingerprintVars(c, jobID, statusURL, credential, nil)
}

// FingerprintVars is Fingerprint over the operation's template variables
// too: the same job id under another owner/repo is another job. Without
// variables it equals Fingerprint, so records made before variables
// existed still resume.
func FingerprintVars(c *pollwarden.ContractSpec, jobID, statusURL, credential string, vars map[string]string) string {
	h := sha256.New()
	for _, s := range []string{c.Name, c.Status.Method, c.Status.URL, jobID, statusURL, credential} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	if c.Status.Body != "" {
		fmt.Fprintf(h, "body %d:%s\n", len(c.Status.Body), c.Status.Body)
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		fmt.Fprintf(h, "var %d:%s=%d:%s\n", len(k), k, len(vars[k]), vars[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// VarsText writes an operation's variables as "owner=acme, repo=web",
// sorted, for the story and a decision request (present.Vars).
func VarsText(vars map[string]string) string { return present.Vars(vars) }
