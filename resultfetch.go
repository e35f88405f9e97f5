package pollwarden

// ResultFetch is the contract's documented call that fetches a succeeded
// job's result (R23): a second provider call such as OpenAI's output file
// content or Anthropic's results_url, made as its own recorded action.
type ResultFetch struct {
	// URL is a template over {job_id}, the contract's variables and the
	// validated result fields (by their path); "{+field}" alone uses a
	// field holding a whole URL, which must still be on an allowed origin.
	URL string
	// Method is GET unless the contract says otherwise; another method
	// (a JSON-RPC tasks/result, an AWS POST) needs Safe.
	Method string
	// Safe is the contract's word that a non-GET fetch is a documented
	// read, so that it is sent without an approval like any read.
	Safe bool `json:",omitempty"`
	// Body is the request body template as JSON text ("" for none), over
	// the same names as URL and, when paged, {next_token}; values are
	// filled in as JSON strings (contract.ResultFetchBody).
	Body string `json:",omitempty"`
	// ErrorPath is a JMESPath whose non-empty value in an answer (a
	// JSON-RPC error) makes the fetch fail: that answer is not the result.
	ErrorPath string `json:",omitempty"`
	// Next is a JMESPath to the token of the next page (Textract's
	// NextToken); "" when the result is one answer. The token goes where
	// the URL or the body says {next_token}.
	Next string `json:",omitempty"`
	// MaxPages bounds a paged fetch; MaxBytes bounds all pages together.
	MaxPages int `json:",omitempty"`
	// MaxBytes bounds the result; a larger one is refused, never cut.
	MaxBytes int64
	// MaxFetches bounds the fetches sent to the provider for one
	// operation, through every door together (Operation.ResultFetchesSent).
	MaxFetches int `json:",omitempty"`
}

// The bounds of result.fetch.max_fetches.
const (
	DefaultMaxFetches = 3
	MaxMaxFetches     = 100
)

// FetchLimit is the contract's max_fetches, DefaultMaxFetches for a
// contract stored before it was kept.
func (f *ResultFetch) FetchLimit() int {
	if f == nil || f.MaxFetches <= 0 {
		return DefaultMaxFetches
	}
	return f.MaxFetches
}

// Paged reports whether the fetch follows pages, written as JSON Lines.
func (f *ResultFetch) Paged() bool { return f != nil && f.Next != "" }

// The audit events of a result fetch: one before the request leaves and
// one with how it ended.
const (
	EventResultFetchStarted EventKind = "result_fetch_started"
	EventResultFetched      EventKind = "result_fetched"
	EventResultFetchFailed  EventKind = "result_fetch_failed"
	// EventResultFetchRefused is a fetch asked for once max_fetches were
	// sent: nothing left.
	EventResultFetchRefused EventKind = "result_fetch_refused"
)
