package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pollwarden/pollwarden"
)

// SubmitQuestion is what a person is asked when a submission's fate is
// unknown: only the provider knows whether the job exists.
const SubmitQuestion = "the provider may or may not have the job: look it up, or resubmit"

// ResumesSubmission says whether stored may be driven on for a submit
// request of fingerprint (SubmitFingerprint): only a submission, and only
// for the same contract, body, credential and variables (R4). It is the
// one matcher of a submission's resume, for package operations and for
// an embedder's controller.SubmitJob alike.
func ResumesSubmission(stored *pollwarden.Operation, fingerprint string) bool {
	return stored.Submission != nil && stored.Fingerprint == fingerprint
}

// SubmitFingerprint identifies a submission: the contract, its submit
// call, the body's digest, the credential name and the variables. The
// same command run again finds the same operation; another body is
// another request and is refused under the same id.
func SubmitFingerprint(c *pollwarden.ContractSpec, bodySHA256, credential string, vars map[string]string) string {
	h := sha256.New()
	var url, method string
	if c.Submit != nil {
		url, method = c.Submit.URL, c.Submit.Method
	}
	for _, s := range []string{"submit", c.Name, method, url, bodySHA256, credential} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		fmt.Fprintf(h, "var %d:%s=%d:%s\n", len(k), k, len(vars[k]), vars[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// BodyDigest is the hex SHA-256 of a submission body.
func BodyDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// NewSubmission builds the record of a job pollwarden submits itself,
// to be stored before anything is sent: the limits, the body and its
// digest, and key as the idempotency key where the contract declares an
// idempotency header (key is ignored otherwise).
func NewSubmission(c *pollwarden.ContractSpec, p NewParams, body []byte, key string, now time.Time) (*pollwarden.Operation, []pollwarden.Event, error) {
	if c.Submit == nil {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "contract %s has no submit block: pollwarden cannot submit its jobs", c.Name)
	}
	if !json.Valid(body) {
		return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "submit.body", "the submission body is not valid JSON")
	}
	s := &pollwarden.Submission{State: pollwarden.SubmissionPending, BodySHA256: BodyDigest(body),
		Body: append(json.RawMessage(nil), body...), MaxAttempts: c.Submit.MaxAttempts}
	if s.MaxAttempts < 1 {
		s.MaxAttempts = 1
	}
	if c.Submit.IdempotencyKeyHeader != "" {
		if key == "" {
			return nil, nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "an idempotency key is required by contract %s", c.Name)
		}
		s.IdempotencyKey = key
	} else {
		s.MaxAttempts = 1
	}
	p.ProviderJobID, p.StatusURL, p.Submission = "", "", s
	op, events, err := NewOperation(c, p, now)
	if err != nil {
		return nil, nil, err
	}
	for i := range events {
		if events[i].Kind == pollwarden.EventSubmitted {
			events[i].Data.Detail = fmt.Sprintf("pollwarden submits it (body sha256 %s…); %s", s.BodySHA256[:12], events[i].Data.Detail)
		}
	}
	return op, events, nil
}

// SubmitSending records attempt N as sent, before the request leaves.
// ok is false when the record allows no send now: it is not in
// PhaseSubmitting, or its submission is not pending.
func SubmitSending(op *pollwarden.Operation, now time.Time) (next *pollwarden.Operation, events []pollwarden.Event, ok bool) {
	if op.Phase != pollwarden.PhaseSubmitting || op.Submission == nil || op.Submission.State != pollwarden.SubmissionPending ||
		op.Submission.Attempts >= op.Submission.MaxAttempts {
		return nil, nil, false
	}
	next = op.Clone()
	s := next.Submission
	s.Attempts++
	s.State = pollwarden.SubmissionSent
	t := now
	s.SentAt = &t
	detail := fmt.Sprintf("attempt %d of %d", s.Attempts, s.MaxAttempts)
	if s.IdempotencyKey != "" {
		detail += ", with the stored idempotency key"
	} else {
		detail += ", without an idempotency key: it is never sent again"
	}
	return next, []pollwarden.Event{newEvent(next, now, pollwarden.EventSubmissionSent, pollwarden.EventData{Detail: detail})}, true
}

// SubmitInterrupted handles a submission recorded as sent whose answer
// was never recorded (its sender died, or outlived its lease). With a
// stored key and attempts left it is sent again (resend, with the
// attempt recorded); otherwise the operation escalates with the question,
// and nothing is sent. ok is false when op has no such submission.
func SubmitInterrupted(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (next *pollwarden.Operation, events []pollwarden.Event, resend, ok bool) {
	if op.Phase != pollwarden.PhaseSubmitting || op.Submission == nil || op.Submission.State != pollwarden.SubmissionSent {
		return nil, nil, false, false
	}
	s := op.Submission
	if s.IdempotencyKey != "" && s.Attempts < s.MaxAttempts {
		p := op.Clone()
		p.Submission.State = pollwarden.SubmissionPending
		next, events, _ = SubmitSending(p, now)
		events[0].Data.Detail = fmt.Sprintf("attempt %d interrupted before its answer was recorded; re-sent as ", s.Attempts) + events[0].Data.Detail
		return next, events, true, true
	}
	next = op.Clone()
	next.Submission.State = pollwarden.SubmissionUnknown
	why := fmt.Sprintf("attempt %d of the submission was sent but its answer was never recorded", s.Attempts)
	if s.IdempotencyKey == "" {
		why += "; the contract declares no idempotency key, so it is not sent again"
	} else {
		why += "; its attempts are used up"
	}
	next.Submission.Detail = why
	return next, submitEscalate(next, c, pollwarden.ReasonIntegrationFailure, why, true, now), false, true
}

// SubmitResult is what one send of a submission produced, already
// secret-free and with the status location checked.
type SubmitResult struct {
	// Sent is false when nothing left this process.
	Sent      bool
	Status    int
	Transport string
	Detail    string
	RequestID string
	JobID     string
	// StatusURL is the status location, absolute and inside the
	// contract's origins; "" when the contract names none.
	StatusURL string
	// Problem says what a 2xx answer lacked (job id, status location).
	Problem string
	// Refused says why the status location was refused; nothing is
	// sent there.
	Refused       string
	ProviderError json.RawMessage
}

// SubmitAnswered records the answer to attempt of op's submission, and
// says whether the submission should be sent again at once (a 429, 5xx or
// timeout with a stored key and attempts left). An answer to another
// attempt than the one recorded changes nothing.
func SubmitAnswered(op *pollwarden.Operation, c *pollwarden.ContractSpec, attempt int, r SubmitResult, now time.Time) (next *pollwarden.Operation, events []pollwarden.Event, again bool) {
	if op.Submission == nil || op.Submission.State != pollwarden.SubmissionSent || op.Submission.Attempts != attempt {
		return op, nil, false
	}
	next = op.Clone()
	s := next.Submission
	t := now
	s.AnsweredAt, s.HTTPStatus, s.RequestID, s.Detail = &t, r.Status, r.RequestID, r.Detail
	answered := func(detail string) pollwarden.Event {
		return newEvent(next, now, pollwarden.EventSubmissionAnswered, pollwarden.EventData{
			HTTPStatus: r.Status, Transport: r.Transport, RequestID: r.RequestID, ProviderJobID: r.JobID, Detail: detail})
	}
	ambiguous := r.Transport != "" || r.Status == 408 || r.Status == 429 || r.Status >= 500
	switch {
	case !r.Sent:
		s.State = pollwarden.SubmissionPending
		s.Attempts-- // nothing left: this attempt never happened
		why := r.Detail + "; nothing was sent"
		return next, append([]pollwarden.Event{answered(why)}, submitEscalate(next, c, pollwarden.ReasonIntegrationFailure, why, true, now)...), false
	case ambiguous && s.IdempotencyKey != "" && s.Attempts < s.MaxAttempts:
		s.State = pollwarden.SubmissionPending
		return next, []pollwarden.Event{answered(r.Detail + "; sent again with the same idempotency key")}, true
	case ambiguous:
		s.State = pollwarden.SubmissionUnknown
		why := r.Detail
		if s.IdempotencyKey == "" {
			why += "; the contract declares no idempotency key, so it is not sent again"
		} else {
			why += fmt.Sprintf("; %d of %d attempts used", s.Attempts, s.MaxAttempts)
		}
		return next, append([]pollwarden.Event{answered(r.Detail)}, submitEscalate(next, c, pollwarden.ReasonIntegrationFailure, why, true, now)...), false
	case r.Status == 401 || r.Status == 403:
		s.State = pollwarden.SubmissionRefused
		next.ProviderError = append(json.RawMessage(nil), r.ProviderError...)
		return next, append([]pollwarden.Event{answered(r.Detail)}, submitEscalate(next, c, pollwarden.ReasonAuthorizationDenied, r.Detail+"; no job was created", true, now)...), false
	case r.Status >= 400:
		s.State = pollwarden.SubmissionRefused
		next.Phase, next.Reason = pollwarden.PhaseFailed, ""
		next.ProviderError = append(json.RawMessage(nil), r.ProviderError...)
		next.FinishedAt = &t
		next.NextPollAt = time.Time{}
		ev := answered(r.Detail + "; the provider refused the submission, which is not sent again")
		fin := newEvent(next, now, pollwarden.EventFinished, pollwarden.EventData{State: "failed", Detail: "the provider refused the submission"})
		return next, []pollwarden.Event{ev, fin}, false
	case r.Status < 200 || r.Status >= 300:
		s.State = pollwarden.SubmissionUnknown
		return next, append([]pollwarden.Event{answered(r.Detail)}, submitEscalate(next, c, pollwarden.ReasonIntegrationFailure, r.Detail+": not an answer a submission expects", true, now)...), false
	}
	// 2xx: the provider has the job.
	s.State = pollwarden.SubmissionAccepted
	next.ProviderJobID = r.JobID
	switch {
	case r.Problem != "":
		why := "the provider accepted the submission, but " + r.Problem
		return next, append([]pollwarden.Event{answered(r.Detail)}, submitEscalate(next, c, pollwarden.ReasonIntegrationFailure, why, false, now)...), false
	case r.Refused != "":
		why := "the status location of the accepted job is refused, and nothing is sent there: " + r.Refused
		return next, append([]pollwarden.Event{answered(r.Detail)}, submitEscalate(next, c, pollwarden.ReasonIntegrationFailure, why, false, now)...), false
	}
	next.StatusURL = r.StatusURL
	next.Phase = pollwarden.PhaseWaiting
	next.NextPollAt, next.NextPollSource = now, pollwarden.DelayLocalBackoff
	return next, []pollwarden.Event{answered(r.Detail)}, false
}

// submitEscalate escalates a submission with the question for a person.
// resubmit offers the approver a new send (with the same key where there
// is one); it is not offered once the provider said it has the job.
func submitEscalate(op *pollwarden.Operation, c *pollwarden.ContractSpec, r pollwarden.Reason, why string, resubmit bool, now time.Time) []pollwarden.Event {
	q := askSubmissionNoResend
	if resubmit {
		q = askSubmission
	}
	return escalate(op, c, r, why, q, now)
}

// submissionMessage is a submission's decision request: what happened to
// it, and the question when its fate is unknown.
func submissionMessage(op *pollwarden.Operation, why string) string {
	q := why
	if op.Submission.State == pollwarden.SubmissionUnknown {
		q = SubmitQuestion + " (" + why + ")"
	}
	return fmt.Sprintf("Submission of operation %s: %s.", op.ID, q)
}

// resubmit reopens an escalated submission for one more send, with the
// stored idempotency key where there is one: an approver's choice, made
// knowing the provider may then have the job twice.
func resubmit(op *pollwarden.Operation) string {
	op.Phase, op.Reason, op.Escalation, op.FinishedAt = pollwarden.PhaseSubmitting, "", nil, nil
	s := op.Submission
	s.State = pollwarden.SubmissionPending
	s.MaxAttempts = s.Attempts + 1
	if s.IdempotencyKey != "" {
		return fmt.Sprintf("resubmission approved: attempt %d, with the stored idempotency key", s.Attempts+1)
	}
	return fmt.Sprintf("resubmission approved: attempt %d, without an idempotency key", s.Attempts+1)
}
