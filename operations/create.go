package operations

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// CreateParams is a request to watch a job (wait, watch_job, POST
// /v1/operations) or, with Submit, to submit one and watch it (submit,
// submit_job, POST /v1/operations with "submit"), as the door received it.
type CreateParams struct {
	Caller Caller
	CreateRequest
	// SameRequest makes the operation id an idempotency key over the whole
	// request (the API's rule): an id taken with the same request answers
	// the stored record, with another one a conflict. Without it, a taken
	// id resumes when contract, job and credential agree (R4).
	SameRequest bool
	// Names spells each field as the door shows it ("--deadline" for
	// "deadline"); a field it lacks keeps the API's name.
	Names map[string]string
	// Door names what the request came through ("pollwarden wait", "POST
	// /v1/operations") in the story's line when it resumes a waiting
	// operation; "" names the caller alone.
	Door string
}

// CreateRequest is what a create asks for, in the shape of the API's JSON
// body (POST /v1/operations), whose digest without the operation id is the
// API's idempotency key (Digest).
type CreateRequest struct {
	// OperationID is the caller's id; "" derives one from the contract,
	// the job (or the submission's body) and the credential's name, so the
	// same request sent again resumes instead of starting another
	// operation on the same job.
	OperationID string `json:"operation_id,omitempty"`
	Contract    string `json:"contract"`
	// Exactly one of JobID and StatusURL, unless Submit is set.
	JobID     string            `json:"job_id,omitempty"`
	StatusURL string            `json:"status_url,omitempty"`
	Vars      map[string]string `json:"vars,omitempty"`
	// Deadline as typed: a duration from now ("40m") or an RFC 3339 time.
	Deadline string `json:"deadline,omitempty"`
	// Limits as given; nil takes the contract's.
	MaxStatusRequests    *int `json:"max_status_requests,omitempty"`
	MaxTransportFailures *int `json:"max_transport_failures,omitempty"`
	// Priority orders the requests of operations waiting on one quota:
	// 1 (most urgent) to 9; nil is the default, 5. Only an approver may
	// give one below 5 (ActionPrioritize).
	Priority *int `json:"priority,omitempty"`
	// Submit, when set, asks pollwarden to submit the job itself under
	// the contract's submit block, instead of JobID and StatusURL.
	Submit *SubmitParams `json:"submit,omitempty"`
}

// SubmitParams is the submission's JSON body, as received.
type SubmitParams struct {
	Body json.RawMessage `json:"body"`
}

// name is field as p's door spells it.
func (p CreateParams) name(field string) string {
	if n, ok := p.Names[field]; ok {
		return n
	}
	return field
}

// Create hands a job over, or resumes the stored operation the request
// names (counters intact, R11). created is false on a resume. Every
// problem of the request is reported at once, and nothing is written
// when there is one. The operation is built once (createParams) and the
// store read once: a taken id is judged against that read by one matcher
// (answerTaken, resumeRefusal), never by the controller.
func (s *Service) Create(ctx context.Context, p CreateParams) (op *pollwarden.Operation, created bool, err error) {
	if !p.Caller.Local && p.Caller.Name == "" {
		return nil, false, refuse(Unauthenticated, "", "this request carries no token: send Authorization: Bearer <token>")
	}
	r, err := s.createParams(p)
	if err != nil {
		return nil, false, err
	}
	// A create that loses the id to another request between its read and
	// its write judges the record that request stored, once. A caller's
	// own id is written first and read only when it is taken (writeFirst):
	// a new id, the common case, then costs no read at all, and a taken
	// one is judged on the read after the refused write, as a lost race
	// is. A derived id is read first: a resume of it must not be judged
	// by earlierOperation, which only a new operation passes.
	writeFirst := p.OperationID != "" && p.Submit == nil
	tries := 2
	if writeFirst {
		tries = 3
	}
	for i := range tries {
		if i > 0 || !writeFirst {
			existing, err := s.store.OperationGet(ctx, r.np.ID)
			switch {
			case errors.Is(err, pollwarden.ErrNotFound):
			case err != nil:
				return nil, false, err
			default:
				op, err := s.takenCreate(ctx, p, r, existing)
				return op, false, err
			}
		}
		if err := s.earlierOperation(ctx, p, r.np, r.ex.Spec()); err != nil {
			return nil, false, err
		}
		op := r.fresh
		if p.Submit != nil {
			op, err = s.ctl.SubmitNew(ctx, r.ex, r.np, r.body)
		} else {
			err = s.createFirst(ctx, r)
		}
		switch {
		case err == nil:
			return op, true, nil
		case errors.Is(err, pollwarden.ErrPruned):
			// A pruned operation's id: it stays taken, and is answered
			// as an id someone else holds, never with what it was.
			return nil, false, errTaken(r.np.ID)
		case !errors.Is(err, pollwarden.ErrExists):
			return nil, false, err
		}
	}
	return nil, false, errTaken(r.np.ID)
}

// takenCreate answers a create whose id is taken by existing: the stored
// record as it is, a resume of it, or a refusal saying what differs.
func (s *Service) takenCreate(ctx context.Context, p CreateParams, r createPlan, existing *pollwarden.Operation) (*pollwarden.Operation, error) {
	ct := r.ex.Spec()
	done, err := p.answerTaken(existing, r.fresh, ct, r.np.RequestDigest, r.fingerprint)
	if err != nil {
		return nil, err
	}
	// Even the API's same request, answered as stored, is told of an
	// edited contract: the wait it names would go on under the new file.
	if existing, err = s.contractChange(ctx, p, existing, ct); err != nil {
		return nil, err
	}
	if p.Submit != nil && !done {
		// A submission left unsent: the controller drives it on, and
		// never re-sends it without the stored key.
		if existing, err = s.ctl.DriveSubmission(ctx, r.ex, existing); err != nil {
			return nil, err
		}
	}
	return existing, s.resumed(ctx, p, existing)
}

// resumed records, for every door alike, that p took up op's wait again
// with its counters as they were, so that the story shows where each
// caller came back; a finished or escalated operation is only read.
func (s *Service) resumed(ctx context.Context, p CreateParams, op *pollwarden.Operation) error {
	if !op.Phase.Polling() {
		return nil
	}
	return s.ctl.Resumed(ctx, op.ID, p.byText())
}

// byText names who sent p, through which door, in a line of the story.
func (p CreateParams) byText() string {
	if p.Door == "" {
		return p.Caller.who()
	}
	return p.Door + " (" + p.Caller.who() + ")"
}

// Check judges p as Create does, without reading or writing any store,
// and returns the operation id Create will use: a door that must not
// open (and so create) its store for a bad request, the CLI, asks first.
// o.Controller may be nil here.
func Check(o Options, p CreateParams) (id string, err error) {
	s := &Service{o: o}
	if s.o.Clock == nil {
		s.o.Clock = pollwarden.RealClock{}
	}
	r, err := s.createParams(p)
	return r.np.ID, err
}

// answerTaken judges a request whose id is taken by op before anything is
// sent: done is true when op is the answer as it is (the API's same
// request), err a refusal; neither lets a submission be driven on.
// asked is the operation the request would create.
func (p CreateParams) answerTaken(op, asked *pollwarden.Operation, ct *pollwarden.ContractSpec, digest, fingerprint string) (done bool, err error) {
	if !p.Caller.sees(op) {
		// Nothing of the other record (its contract, job, phase), and the
		// same words whether or not the requests match.
		return false, errTaken(op.ID)
	}
	if !p.SameRequest {
		if p.Submit != nil {
			if refusal := submitRefusal(op, fingerprint); refusal != nil {
				return false, refusal
			}
			return false, nil
		}
		if refusal := resumeRefusal(op, asked, ct); refusal != nil {
			return false, refusal
		}
		return false, nil
	}
	if op.RequestDigest != digest {
		// What a resume would refuse is said in the matcher's words, the
		// same through every door; only what it leaves aside (deadline,
		// limits) gets the idempotency key's own.
		if asked != nil && p.Submit == nil {
			if refusal := resumeRefusal(op, asked, ct); refusal != nil {
				return false, refusal
			}
		}
		if p.Submit != nil {
			if refusal := submitRefusal(op, fingerprint); refusal != nil {
				return false, refusal
			}
		}
		return false, refuse(Conflict, p.name("operation_id"), "operation %s already exists with another request (contract %s, job %s); use another operation_id, or read it as it is",
			op.ID, op.Contract, jobOf(op))
	}
	// A submission whose answer was never recorded (the process died
	// sending it): the same request drives it on, which never re-sends it
	// without the stored key.
	return !(p.Submit != nil && op.Phase.Submitting()), nil
}

// errTaken refuses an operation id that belongs to an operation the
// caller may not see, saying nothing of that operation.
func errTaken(id string) *Problems {
	return refuse(Conflict, "operation_id", "operation_id %s is already in use; choose another, or omit operation_id to get one derived from the contract and job", display.Clip(id))
}

// createPlan is a judged create request: its contract, its parameters
// with their id, and (for a job the caller names) the operation it
// creates with its first events, built once.
type createPlan struct {
	ex   *contract.Loaded
	np   policy.NewParams
	body []byte // a submission's body as it will be sent
	// fresh is the operation to store, nil for a submission (the
	// controller records it with its idempotency key).
	fresh  *pollwarden.Operation
	events []pollwarden.Event
	// fingerprint is the request's (policy.FingerprintVars or
	// SubmitFingerprint), which a resume must match.
	fingerprint string
}

// createParams checks everything the request says, against its contract,
// and turns it into policy.NewParams with its id and the operation they
// build. Every problem is reported at once.
func (s *Service) createParams(p CreateParams) (createPlan, error) {
	probs := &Problems{Kind: Invalid}
	if p.OperationID != "" {
		if err := pollwarden.CheckOperationID(p.name("operation_id"), p.OperationID); err != nil {
			probs.addErr("operation_id", err)
		}
	}
	names := strings.Join(s.o.Contracts.Names(), ", ")
	if names == "" {
		names = "(none)"
	}
	if p.Contract == "" {
		probs.add("contract", "%s is required (loaded: %s; built-in: %s)", p.name("contract"), names, strings.Join(builtin.Names(), ", "))
		return createPlan{}, probs
	}
	ex, ok := s.o.Contracts.Get(p.Contract)
	if !ok {
		probs.add("contract", "unknown contract %s (loaded: %s; built-in: %s)", display.Clip(p.Contract), names, strings.Join(builtin.Names(), ", "))
		return createPlan{}, probs
	}
	ct := ex.Spec()
	now := s.o.Clock.Now()
	np := policy.NewParams{ID: p.OperationID, ProviderJobID: p.JobID, StatusURL: p.StatusURL,
		MayRaise: p.Caller.mayRaise(), Owner: p.Caller.owner(), By: p.Caller.by()}
	vars, varsErr := contract.OperationVars(ct, p.Vars, p.StatusURL != "")
	if p.Submit != nil {
		// A submission's status URL may come from its answer.
		vars, varsErr = contract.SubmitVars(ct, p.Vars)
	}
	if varsErr != nil {
		probs.add("vars", "%s: %v", p.name("vars"), varsErr)
	}
	np.Vars = vars
	var body []byte
	switch {
	case p.Submit != nil:
		body = p.submitProblems(ct, varsErr == nil, vars, probs)
	case (p.JobID == "") == (p.StatusURL == ""):
		probs.add("job_id", "give exactly one of %s and %s", p.name("job_id"), p.name("status_url"))
	case p.JobID != "" && varsErr == nil:
		if _, err := contract.StatusURLFor(ct, p.JobID, vars); err != nil {
			probs.add("job_id", "%s: %v", p.name("job_id"), err)
		}
	case p.StatusURL != "":
		if err := contract.CheckOrigin(ct, p.StatusURL); err != nil {
			probs.add("status_url", "%s: %v", p.name("status_url"), err)
		}
	}
	for _, l := range []struct {
		field string
		v     *int
		dst   *int
	}{{"max_status_requests", p.MaxStatusRequests, &np.MaxStatusRequests}, {"max_transport_failures", p.MaxTransportFailures, &np.MaxTransportFailures}} {
		switch {
		case l.v == nil:
		case *l.v < 1:
			probs.add(l.field, "%s must be at least 1, got %d", p.name(l.field), *l.v)
		default:
			*l.dst = *l.v
		}
	}
	prio, prioForbidden := p.priorityProblems(probs)
	np.Priority = prio
	if p.Deadline != "" {
		dl, err := pollwarden.ParseDeadline(p.name("deadline"), p.Deadline, now)
		if err != nil {
			probs.addErr("deadline", err)
		}
		np.Deadline = dl
	}
	// The core's own checks (limits and deadline within the contract's,
	// the ids as text), so that every problem is reported at once. The
	// placeholders only silence its "a job id is required" and "an
	// operation id is required", said above or filled in below.
	np.ContractDigest = s.contractDigest(ct)
	np.RequestDigest = p.CreateRequest.Digest()
	if s.ctl != nil {
		np.Rand = s.ctl.Factors()
	}
	cred := credentialRef(ct)
	fp := policy.FingerprintVars(ct, np.ProviderJobID, np.StatusURL, cred, np.Vars)
	if p.Submit != nil {
		fp = policy.SubmitFingerprint(ct, policy.BodyDigest(body), cred, np.Vars)
	}
	if np.ID == "" {
		np.ID = pollwarden.DerivedOperationID(ct.Name, fp, p.Caller.derivedOwner())
	}
	// The placeholder only silences the core's "a job id is required",
	// said above, so that every problem is reported at once; the
	// operation it builds is then never used.
	probe := np
	if probe.ProviderJobID == "" && probe.StatusURL == "" {
		probe.ProviderJobID = "-"
	}
	fresh, events := coreProblems(ct, probe, now, probs)
	if len(probs.List) == 0 && prioForbidden != nil {
		return createPlan{np: np}, prioForbidden
	}
	if len(probs.List) == 0 && s.o.CredentialAvailable != nil {
		if err := s.o.CredentialAvailable(ct); err != nil {
			probs.add("contract", "%s", strings.TrimSpace(fmt.Sprintf("contract %s: %v %s", ct.Name, err, s.o.CredentialHint)))
		}
	}
	if err := probs.orNil(); err != nil {
		return createPlan{np: np}, err
	}
	r := createPlan{ex: ex, np: np, body: body, fingerprint: fp}
	if p.Submit == nil {
		r.fresh, r.events = fresh, events
	}
	return r, nil
}

// coreProblems builds the operation probe asks for (policy.NewOperation)
// and adds the core's problems with it, with their fields; a limit above
// the contract's is marked Widens: only an approver could lift it.
func coreProblems(ct *pollwarden.ContractSpec, probe policy.NewParams, now time.Time, probs *Problems) (*pollwarden.Operation, []pollwarden.Event) {
	op, events, err := policy.NewOperation(ct, probe, now)
	pe, ok := errors.AsType[*policy.ParamsError](err)
	if !ok {
		if err != nil {
			probs.addErr("", err)
		}
		return op, events
	}
	for _, pp := range pe.Problems {
		probs.List = append(probs.List, Problem{Field: pp.Field, Message: pp.Message, Widens: pp.AboveContract})
	}
	return nil, nil
}

// submitProblems checks a request that asks pollwarden to submit the job:
// the contract must have a submit block, the job is not known yet (so
// neither job id nor status URL), and the body is JSON. It returns the
// body as it will be sent.
func (p CreateParams) submitProblems(ct *pollwarden.ContractSpec, varsOK bool, vars map[string]string, probs *Problems) []byte {
	if ct.Submit == nil {
		probs.add("contract", "contract %s has no submit block: pollwarden cannot submit its jobs (give %s instead)", ct.Name, p.name("job_id"))
	}
	if p.JobID != "" || p.StatusURL != "" {
		probs.add("submit", "%s replaces %s and %s: give one or the other", p.name("submit"), p.name("job_id"), p.name("status_url"))
	}
	b := bytes.TrimSpace(p.Submit.Body)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		probs.add("submit.body", "%s is required: the JSON body of the submission", p.name("submit.body"))
	case !json.Valid(b):
		probs.add("submit.body", "%s is not valid JSON", p.name("submit.body"))
	case jsonDepth(b) > maxBodyDepth:
		probs.add("submit.body", "%s nests %d levels deep; at most %d", p.name("submit.body"), jsonDepth(b), maxBodyDepth)
	}
	if ct.Submit != nil && varsOK {
		if _, err := contract.SubmitURL(ct, vars); err != nil {
			probs.add("vars", "submit url: %v", err)
		}
	}
	return []byte(p.Submit.Body)
}

// Digest identifies the request apart from its operation id: every field
// as sent, so "the same request" means the same contract, job, deadline
// and limits. A relative deadline ("30m") is digested as written, so a
// retry of the very same request matches.
func (r CreateRequest) Digest() string {
	r.OperationID = ""
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(append([]byte("create/v1\n"), b...))
	return hex.EncodeToString(sum[:16])
}

// credentialRef names the contract's credential (never its value), for
// the request's fingerprint.
func credentialRef(ct *pollwarden.ContractSpec) string {
	if ct.Status.Credential != nil {
		return ct.Status.Credential.Ref
	}
	return ""
}

func jobOf(op *pollwarden.Operation) string {
	if op.ProviderJobID != "" {
		return op.ProviderJobID
	}
	return op.StatusURL
}
