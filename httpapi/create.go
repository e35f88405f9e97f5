package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/policy"
)

// createRequest is the body of POST /v1/operations (SPEC).
type createRequest struct {
	OperationID          string            `json:"operation_id,omitempty"`
	Contract             string            `json:"contract"`
	JobID                string            `json:"job_id,omitempty"`
	StatusURL            string            `json:"status_url,omitempty"`
	Vars                 map[string]string `json:"vars,omitempty"`
	Deadline             string            `json:"deadline,omitempty"`
	MaxStatusRequests    *int              `json:"max_status_requests,omitempty"`
	MaxTransportFailures *int              `json:"max_transport_failures,omitempty"`
	// Submit, instead of job_id and status_url, asks pollwarden to submit
	// the job itself under the contract's submit block.
	Submit *submitRequest `json:"submit,omitempty"`
}

// create hands a job over (POST /v1/operations). The operation id is the
// idempotency key: the same id with the same body answers 200 with the
// stored record (a client retrying after a lost answer gets what it
// created, counters intact), with another body 409; a new id 201.
// Without an operation_id the id is derived from the contract, the job,
// the credential's name and the caller's token, so that a retry without
// one resumes too.
func (a *api) create(w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error {
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.OperationID != "" {
		if err := pollwarden.CheckOperationID("operation_id", req.OperationID); err != nil {
			return unprocessable("%s", trimSentinel(err))
		}
	}
	digest := req.digest()
	ex, p, err := a.createParams(req, who)
	if err != nil {
		return err
	}
	if p.ID == "" {
		// As wait and watch_job do: the same request sent again (after a
		// lost answer) resumes the operation instead of starting another
		// one on the same job. A submission is its body: the same body
		// sent again is the same job.
		ct := ex.Contract()
		fp := policy.FingerprintVars(ct, p.ProviderJobID, p.StatusURL, credentialRef(ct), p.Vars)
		if req.Submit != nil {
			fp = digest
		}
		p.ID = pollwarden.DerivedOperationID(ct.Name, fp, who.Name)
	}
	resuming := false
	op, err := a.store.OperationGet(r.Context(), p.ID)
	switch {
	case err == nil && req.Submit != nil && op.Phase.Submitting() && op.RequestDigest == digest && callerOf(r).Sees(op):
		// A submission whose answer was never recorded (the daemon died
		// sending it): the same request drives it on, which never re-sends
		// it without the stored key.
		resuming = true
	case err == nil:
		return a.answerExisting(w, r, op, digest)
	case !errors.Is(err, pollwarden.ErrNotFound):
		return internal(err)
	}
	p.RequestDigest = digest
	created := !resuming
	if req.Submit != nil {
		op, err = a.ctl.SubmitJob(r.Context(), ex, p, req.Submit.Body)
	} else {
		op, created, err = a.ctl.Submit(r.Context(), ex, p)
	}
	if err != nil {
		// Another request may have created the id since we looked.
		if existing, gerr := a.store.OperationGet(r.Context(), p.ID); gerr == nil {
			return a.answerExisting(w, r, existing, digest)
		}
		if errors.Is(err, pollwarden.ErrInvalid) {
			return unprocessable("%s", strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
		}
		return internal(err)
	}
	if !created {
		return a.answerExisting(w, r, op, digest)
	}
	w.Header().Set("Location", "/v1/operations/"+url.PathEscape(op.ID))
	writeJSON(w, http.StatusCreated, pollwarden.OutcomeOf(op))
	return nil
}

// answerExisting is the idempotent answer for an id that is taken. An id
// taken by an operation the caller may not see is a 409 that says only
// that: nothing of the other record (its contract, job, phase), and the
// same words whether or not the bodies match.
func (a *api) answerExisting(w http.ResponseWriter, r *http.Request, op *pollwarden.Operation, digest string) error {
	if !callerOf(r).Sees(op) {
		return conflict("operation_id %s is already in use; choose another, or omit operation_id to get one derived from the contract and job", clip(op.ID))
	}
	if op.RequestDigest != digest {
		return conflict("operation %s already exists with another request (contract %s, job %s); use another operation_id, or GET /v1/operations/%s",
			op.ID, op.Contract, jobOf(op), op.ID)
	}
	writeJSON(w, http.StatusOK, pollwarden.OutcomeOf(op))
	return nil
}

// createParams checks everything that depends on the contract and turns
// the body into policy.NewParams. Every problem is reported at once.
func (a *api) createParams(req createRequest, who pollwarden.Actor) (ex *contract.Extractor, p policy.NewParams, err error) {
	var problems []string
	if req.Contract == "" {
		return nil, p, unprocessable("contract is required (one of: %s)", strings.Join(a.contracts.Names(), ", "))
	}
	ex, ok := a.contracts.Get(req.Contract)
	if !ok {
		return nil, p, unprocessable("unknown contract %s (loaded: %s; built-in: %s)", clip(req.Contract),
			strings.Join(a.contracts.Names(), ", "), strings.Join(builtin.Names(), ", "))
	}
	ct := ex.Contract()
	if a.credentialAvailable != nil {
		if err := a.credentialAvailable(ct); err != nil {
			problems = append(problems, fmt.Sprintf("contract %s: %v where pollwarden serve runs; set it there (nothing was registered)", ct.Name, err))
		}
	}
	p = policy.NewParams{ID: req.OperationID, ProviderJobID: req.JobID, StatusURL: req.StatusURL, MayRaise: who.Role.CanGrant(),
		Owner: who.Name, By: &who}
	vars, varsErr := contract.OperationVars(ct, req.Vars, req.StatusURL != "")
	if varsErr != nil {
		problems = append(problems, fmt.Sprintf("vars: %v", varsErr))
	}
	p.Vars = vars
	switch {
	case req.Submit != nil:
		problems = append(problems, submitProblems(ct, req)...)
	case (req.JobID == "") == (req.StatusURL == ""):
		problems = append(problems, "give exactly one of job_id and status_url")
	case req.JobID != "" && varsErr == nil:
		if _, err := contract.StatusURLFor(ct, req.JobID, vars); err != nil {
			problems = append(problems, fmt.Sprintf("job_id: %v", err))
		}
	case req.StatusURL != "":
		if err := contract.CheckOrigin(ct, req.StatusURL); err != nil {
			problems = append(problems, fmt.Sprintf("status_url: %v", err))
		}
	}
	for _, l := range []struct {
		name string
		v    *int
		dst  *int
	}{{"max_status_requests", req.MaxStatusRequests, &p.MaxStatusRequests}, {"max_transport_failures", req.MaxTransportFailures, &p.MaxTransportFailures}} {
		if l.v == nil {
			continue
		}
		if *l.v < 1 {
			problems = append(problems, fmt.Sprintf("%s must be at least 1, got %d", l.name, *l.v))
		}
		*l.dst = *l.v
	}
	if req.Deadline != "" {
		dl, err := pollwarden.ParseDeadline("deadline", req.Deadline, a.clock.Now())
		if err != nil {
			problems = append(problems, trimSentinel(err))
		}
		p.Deadline = dl
	}
	if len(problems) > 0 {
		// Also ask the core about the limits and the deadline, so that
		// every problem is reported at once. The placeholder job only
		// silences the core's "a job id is required", already said above.
		probe := p
		if probe.ProviderJobID == "" && probe.StatusURL == "" {
			probe.ProviderJobID = "-"
		}
		if _, _, err := policy.NewOperation(ct, probe, a.clock.Now()); err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
		}
		return nil, p, unprocessable("%s", strings.Join(problems, "; "))
	}
	return ex, p, nil
}

// digest identifies the request apart from its operation id: every field
// as sent, so "the same body" means the same contract, job, deadline and
// limits. A relative deadline ("30m") is digested as written, so a retry
// of the very same body matches.
func (req createRequest) digest() string {
	req.OperationID = ""
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(append([]byte("create/v1\n"), b...))
	return hex.EncodeToString(sum[:16])
}

// credentialRef names the contract's credential (never its value) for
// the request fingerprint, as the other doors do.
func credentialRef(ct *pollwarden.Contract) string {
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

// clip shortens a caller's value for a message.
func clip(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
