package pollwarden

// ResultFetch is the contract's documented call that fetches a succeeded
// job's result (R23): a second provider call such as OpenAI's output file
// content or Anthropic's results_url, made as its own recorded action.
type ResultFetch struct {
	// URL is a template over {job_id}, the contract's variables and the
	// validated result fields (by their path); "{+field}" alone uses a
	// field holding a whole URL, which must still be on an allowed origin.
	URL string
	// Method is GET unless the contract says otherwise.
	Method string
	// MaxBytes bounds the result; a larger one is refused, never cut.
	MaxBytes int64
}

// The audit events of a result fetch: one before the request leaves and
// one with how it ended.
const (
	EventResultFetchStarted EventKind = "result_fetch_started"
	EventResultFetched      EventKind = "result_fetched"
	EventResultFetchFailed  EventKind = "result_fetch_failed"
)
