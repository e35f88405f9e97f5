package policy

import "github.com/pollwarden/pollwarden"

// notModified reports a 304 that answers our own If-None-Match: the
// contract asks for conditional requests and the record holds the ETag
// that was sent. Any other 304 is an answer the contract does not explain.
func (d *decider) notModified() bool {
	return d.obs.Status == 304 && d.c.Status.Conditional == "etag" && d.op.LastETag != "" && d.op.LastState != ""
}

// unchanged handles a 304: a pending observation of the state last read,
// counted as a request (it was reserved) and not as a failure.
func (d *decider) unchanged() {
	d.resp.State, d.resp.ProviderState = d.op.LastState, d.op.LastProviderState
	d.resp.Decision = "304 not modified: the job is unchanged (" + d.op.LastState + ")"
	resetTransportFailures(d.op, d.c)
	if classOf(d.c, d.op.LastState) != classPending {
		d.escalate(pollwarden.ReasonIntegrationFailure, "304 not modified for a job whose last state "+d.op.LastState+" is not pending")
		return
	}
	d.pending()
}

// keepETag remembers the ETag of an answer whose state was read, for the
// next conditional request; an answer without one clears it, so a stale
// tag is never sent.
func (d *decider) keepETag() {
	if d.c.Status.Conditional == "etag" {
		d.op.LastETag = d.obs.ETag
	}
}
