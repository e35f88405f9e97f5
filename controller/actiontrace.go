package controller

import (
	"context"
	"errors"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// The recorded actions besides a step each get a span of their own, so
// an operator sees a submission, a result fetch, a cancel or an agent's
// extension request in the same trace as the request that asked for it.
// Each wrapper only starts and ends the span: the action is unchanged.

// Attribute keys of the actions' spans.
const (
	attrSubmissionState = attribute.Key("pollwarden.submission.state")
	attrSubmitAttempt   = attribute.Key("pollwarden.submission.attempt")
	attrRequestID       = attribute.Key("pollwarden.provider.request_id")
	attrCancelState     = attribute.Key("pollwarden.cancel.state")
	attrResultBytes     = attribute.Key("pollwarden.result.bytes")
	attrResultSHA256    = attribute.Key("pollwarden.result.sha256")
	attrExtraTime       = attribute.Key("pollwarden.extension.extra_seconds")
	attrExtraRequests   = attribute.Key("pollwarden.extension.extra_status_requests")
)

// SubmitJob submits body as a new job under the contract's submit block
// and records the answer, or resumes the stored submission with the same
// id (see submitJob), inside a pollwarden.submit span.
func (c *Controller) SubmitJob(ctx context.Context, ex *contract.Loaded, p policy.NewParams, body []byte) (*pollwarden.Operation, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.submit", p.ID, ex.Spec().Name, trace.SpanKindInternal)
	op, err := c.submitJob(ctx, ex, p, body)
	endSubmit(span, op, err)
	return op, err
}

// SubmitNew records body as a new submission and drives it (see
// submitNew), inside a pollwarden.submit span. A taken id is
// pollwarden.ErrExists or pollwarden.ErrPruned, nothing written.
func (c *Controller) SubmitNew(ctx context.Context, ex *contract.Loaded, p policy.NewParams, body []byte) (*pollwarden.Operation, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.submit", p.ID, ex.Spec().Name, trace.SpanKindInternal)
	op, err := c.submitNew(ctx, ex, p, body)
	endSubmit(span, op, err)
	return op, err
}

// DriveSubmission drives on the stored submission op, which the caller
// matched to its request (policy.ResumesSubmission), until it is settled,
// inside a pollwarden.submit span; a settled one is returned as it is.
func (c *Controller) DriveSubmission(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.submit", op.ID, ex.Spec().Name, trace.SpanKindInternal)
	op, err := c.driveSubmission(ctx, ex, op)
	endSubmit(span, op, err)
	return op, err
}

// StepSubmission is the daemon's turn on an operation left submitting
// (see stepSubmission); a turn that sends is a pollwarden.submit span.
func (c *Controller) StepSubmission(ctx context.Context, ex *contract.Loaded, op *pollwarden.Operation) (StepResult, error) {
	if !c.traced || !op.Phase.Submitting() || op.Submission == nil || c.clock.Now().Before(policy.SubmitOrphanDue(op, c.leaseTTL(ex.Spec()))) {
		return c.stepSubmission(ctx, ex, op)
	}
	ctx, span := c.startSpan(ctx, "pollwarden.submit", op.ID, ex.Spec().Name, trace.SpanKindInternal)
	res, err := c.stepSubmission(ctx, ex, op)
	endSubmit(span, res.Op, err)
	return res, err
}

// endSubmit says where the submission stands: the operation's phase, the
// submission's state and the provider's request id for the answer.
func endSubmit(span trace.Span, op *pollwarden.Operation, err error) {
	if span.IsRecording() && err == nil && op != nil && op.Submission != nil {
		span.SetAttributes(attrSubmissionState.String(op.Submission.State))
		if op.Submission.RequestID != "" {
			span.SetAttributes(attrRequestID.String(op.Submission.RequestID))
		}
	}
	endSpan(span, op, err)
}

// endSubmitRequest says how one send of a submission was answered.
func endSubmitRequest(span trace.Span, attempt int, r policy.SubmitResult) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(requestAttrs(0, r.Status, r.Transport)[1:]...)
	span.SetAttributes(attrSubmitAttempt.Int(attempt))
	if r.RequestID != "" {
		span.SetAttributes(attrRequestID.String(r.RequestID))
	}
	endSent(span, r.Sent, r.Status, r.Transport)
}

// FetchResult fetches operation id's result as its own recorded action
// (see fetchResult) inside a pollwarden.result span, the client span whose
// context status.propagate_trace sends.
func (c *Controller) FetchResult(ctx context.Context, ex *contract.Loaded, id string, actor pollwarden.Actor, w io.Writer) (ResultFetch, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.result", id, ex.Spec().Name, trace.SpanKindClient)
	out, err := c.fetchResult(ctx, ex, id, actor, w)
	if span.IsRecording() {
		span.SetAttributes(attrResultBytes.Int(int(out.Bytes)))
		if out.SHA256 != "" && err == nil {
			span.SetAttributes(attrResultSHA256.String(out.SHA256))
		}
		if err == nil {
			span.SetAttributes(attrOutcome.String("fetched"))
		}
	}
	endAction(span, err)
	return out, err
}

// Cancel asks the provider to cancel operation id's job as its own
// recorded action (see cancelJob) inside a pollwarden.cancel span.
func (c *Controller) Cancel(ctx context.Context, ex *contract.Loaded, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.cancel", id, ex.Spec().Name, trace.SpanKindClient)
	op, err := c.cancelJob(ctx, ex, id, p)
	if span.IsRecording() && err == nil && op != nil && op.Cancel != nil {
		span.SetAttributes(attrCancelState.String(string(op.Cancel.State)))
		if op.Cancel.HTTPStatus != 0 {
			span.SetAttributes(attrHTTPStatus.Int(op.Cancel.HTTPStatus))
		}
	}
	endSpan(span, op, err)
	return op, err
}

// RequestExtension records an agent's request (see requestExtension)
// inside a pollwarden.extension_request span; the justification, free
// text, stays out of it.
func (c *Controller) RequestExtension(ctx context.Context, id string, actor pollwarden.Actor, p pollwarden.ExtensionRequest) (*pollwarden.Operation, error) {
	ctx, span := c.startSpan(ctx, "pollwarden.extension_request", id, "", trace.SpanKindInternal)
	op, err := c.requestExtension(ctx, id, actor, p)
	if span.IsRecording() {
		span.SetAttributes(attrExtraTime.Int(int(p.ExtraTime.Seconds())), attrExtraRequests.Int(p.ExtraStatusRequests),
			attrActorRole.String(string(actor.Role)))
		if op != nil {
			span.SetAttributes(attrContract.String(op.Contract))
		}
	}
	endSpan(span, op, err)
	return op, err
}

// endAction ends an action's span with err's kind as its status.
func endAction(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		class := errorClass(err)
		switch {
		case errors.Is(err, ErrResultRefused):
			class = "refused"
		case errors.Is(err, ErrResultFailed):
			class = "failed"
		}
		span.SetStatus(codes.Error, class)
		span.SetAttributes(attrOutcome.String("error"))
	}
	span.End()
}
