package controller

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/prober"
)

// The controller traces with the OpenTelemetry API alone: whoever embeds
// it passes a Tracer (package tracing builds one that exports over OTLP),
// and without one the no-op tracer costs next to nothing. Attributes are
// ids, names, codes and outcomes only, never a URL, a header, a body or a
// note, so no secret and no provider payload can reach a trace.

// Span attribute keys.
const (
	attrOperation   = attribute.Key("pollwarden.operation.id")
	attrContract    = attribute.Key("pollwarden.contract")
	attrOutcome     = attribute.Key("pollwarden.outcome")
	attrReason      = attribute.Key("pollwarden.reason")
	attrRequest     = attribute.Key("pollwarden.status_request")
	attrHTTPStatus  = attribute.Key("http.response.status_code")
	attrTransport   = attribute.Key("pollwarden.transport_error")
	attrDelaySource = attribute.Key("pollwarden.delay_source")
	attrOption      = attribute.Key("pollwarden.decision.option")
	attrActorRole   = attribute.Key("pollwarden.decision.actor_role")
	attrExpired     = attribute.Key("pollwarden.decision.expired")
)

// noSpan is what startSpan returns without a tracer: the API's no-op
// span, so an untraced step builds no options or attributes at all.
var noSpan = trace.SpanFromContext(context.Background())

func defaultTracer(t trace.Tracer) trace.Tracer {
	if t == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return t
}

// startSpan starts a span named name for the operation id of contract ct.
func (c *Controller) startSpan(ctx context.Context, name, id, ct string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !c.traced {
		return ctx, noSpan
	}
	return c.tracer.Start(ctx, name, trace.WithSpanKind(kind),
		trace.WithAttributes(attrOperation.String(id), attrContract.String(ct)))
}

// endSpan records where op stands (its phase as the outcome, the reason
// of an escalation or a stop, the next poll's source) or err, and ends.
func endSpan(span trace.Span, op *pollwarden.Operation, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, errorClass(err))
		span.SetAttributes(attrOutcome.String("error"))
	} else if op != nil {
		span.SetAttributes(attrOutcome.String(string(op.Phase)))
		if op.Reason != "" {
			span.SetAttributes(attrReason.String(string(op.Reason)))
		}
		if op.Phase.Polling() && op.NextPollSource != "" {
			span.SetAttributes(attrDelaySource.String(string(op.NextPollSource)))
		}
	}
	span.End()
}

// errorClass names an error by its kind, not its text: a store's or a
// provider's message is not for a trace.
func errorClass(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{{pollwarden.ErrNotFound, "not_found"}, {pollwarden.ErrInvalid, "invalid"}, {pollwarden.ErrForbidden, "forbidden"},
		{pollwarden.ErrConflict, "conflict"}, {pollwarden.ErrLeaseHeld, "lease_held"}, {pollwarden.ErrLeaseLost, "lease_lost"}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "internal"
}

// requestAttrs are what a status request's span says of its answer.
func requestAttrs(n, status int, transport string) []attribute.KeyValue {
	a := []attribute.KeyValue{attrRequest.Int(n)}
	if status != 0 {
		a = append(a, attrHTTPStatus.Int(status))
	}
	if transport != "" {
		a = append(a, attrTransport.String(transport))
	}
	return a
}

// endClaim says whether the claim reserved a request.
func endClaim(span trace.Span, reserved bool, err error) {
	switch {
	case !span.IsRecording():
	case errors.Is(err, pollwarden.ErrLeaseHeld):
		span.SetAttributes(attrOutcome.String("lease_held"))
	case err != nil:
		span.SetStatus(codes.Error, errorClass(err))
		span.SetAttributes(attrOutcome.String("error"))
	case reserved:
		span.SetAttributes(attrOutcome.String("reserved"))
	default:
		span.SetAttributes(attrOutcome.String("nothing_to_send"))
	}
	span.End()
}

// endRequest says how the status request was answered: its code, or the
// class of transport failure, or that it was never sent.
func endRequest(span trace.Span, n int, r prober.Response) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(requestAttrs(n, r.Status, r.Transport)...)
	switch {
	case !r.Sent || r.CredentialError != nil:
		span.SetAttributes(attrOutcome.String("not_sent"))
		span.SetStatus(codes.Error, "not sent")
	case r.Transport != "":
		span.SetAttributes(attrOutcome.String("transport_failure"))
		span.SetStatus(codes.Error, r.Transport)
	default:
		span.SetAttributes(attrOutcome.String("answered"))
		if r.Status >= 500 {
			span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(r.Status))
		}
	}
	span.End()
}
