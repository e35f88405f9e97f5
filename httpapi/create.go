package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

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

// validID keeps operation ids usable as one URL path segment as they are.
var validID = regexp.MustCompile(`^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}$`)

// create hands a job over (POST /v1/operations). The operation id is the
// idempotency key: the same id with the same body answers 200 with the
// stored record (a client retrying after a lost answer gets what it
// created, counters intact), with another body 409; a new id 201.
func (a *api) create(w http.ResponseWriter, r *http.Request, who pollwarden.Actor) error {
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.OperationID != "" && !validID.MatchString(req.OperationID) {
		return unprocessable("operation_id %s: use 1 to 128 letters, digits, '-', '_', '.' or '~'", clip(req.OperationID))
	}
	digest := req.digest()
	resuming := false
	if req.OperationID != "" {
		op, err := a.store.OperationGet(r.Context(), req.OperationID)
		switch {
		case err == nil && req.Submit != nil && op.Phase.Submitting() && op.RequestDigest == digest && callerOf(r).Sees(op):
			// A submission whose answer was never recorded (the daemon
			// died sending it): the same request drives it on, which
			// never re-sends it without the stored key.
			resuming = true
		case err == nil:
			return a.answerExisting(w, r, op, digest)
		case !errors.Is(err, pollwarden.ErrNotFound):
			return internal(err)
		}
	} else {
		req.OperationID = newOperationID()
	}
	ex, p, err := a.createParams(req, who)
	if err != nil {
		return err
	}
	p.RequestDigest = digest
	var op *pollwarden.Operation
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
		return conflict("operation_id %s is already in use; choose another, or omit operation_id to get a fresh one", clip(op.ID))
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
		dl, err := parseDeadline(req.Deadline, a.clock.Now())
		if err != nil {
			problems = append(problems, err.Error())
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

// parseDeadline accepts a positive Go duration from now ("30m") or an RFC
// 3339 time in the future, as `pollwarden wait --deadline` does.
func parseDeadline(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("deadline %s must be positive", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("deadline %s is neither a duration (40m) nor an RFC 3339 time", clip(s))
	}
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("deadline %s is not in the future", s)
	}
	return t, nil
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

// newOperationID is random and URL-safe. A caller that may retry should
// send its own operation_id: without one, a retry is a new operation with
// a fresh budget.
func newOperationID() string {
	return "op-" + strings.ToLower(rand.Text())
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
