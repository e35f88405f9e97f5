package pollwarden

import "strings"

// ShownURL is a URL as a person, an agent or a webhook receiver is shown
// it: without its query and fragment, which for a presigned status URL
// (S3/GCS/Azure SAS, Azure Durable Functions' code=) are themselves a
// credential; "?…" marks the cut. Only the prober needs the whole URL.
func ShownURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}

// OutcomeFor is OutcomeOf as reader (a token's name, or a local owner)
// reads it: the status URL whole only for the agent that gave it when it
// created the operation. A status URL a submission's answer named was
// never the agent's, so nobody reads it whole.
func OutcomeFor(op *Operation, reader string) Outcome {
	o := OutcomeOf(op)
	if reader != "" && reader == op.Owner && op.Submission == nil {
		o.StatusURL = op.StatusURL
	}
	return o
}
