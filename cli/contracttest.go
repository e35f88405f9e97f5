package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/spf13/cobra"
)

// testReport is what `contract test` concludes from one saved answer.
type testReport struct {
	Contract      string              `json:"contract"`
	HTTPStatus    int                 `json:"http_status"`
	State         string              `json:"state,omitempty"`
	Category      string              `json:"category,omitempty"`
	FromStatus    bool                `json:"state_from_status_code,omitempty"`
	ProviderState string              `json:"provider_state,omitempty"`
	Problem       string              `json:"problem,omitempty"`
	Fields        []policy.FieldCheck `json:"result_fields,omitempty"`
	ProviderError json.RawMessage     `json:"provider_error,omitempty"`
	Hints         map[string]any      `json:"hints,omitempty"`
	HintAccepted  bool                `json:"hint_accepted,omitempty"`
	HintsRejected []string            `json:"hints_rejected,omitempty"`
	RateLimit     string              `json:"rate_limit_signal,omitempty"`
	RetryAfter    string              `json:"retry_after,omitempty"`
	Decision      string              `json:"decision"`
	Outcome       string              `json:"outcome,omitempty"`
	Reason        string              `json:"reason,omitempty"`
	Why           string              `json:"why,omitempty"`
	NextPollIn    string              `json:"next_poll_in,omitempty"`
	DelaySource   string              `json:"delay_source,omitempty"`
	Options       []string            `json:"options,omitempty"`
}

// fixedRand stands in for the jitter draws so a test's answer is the same
// every run: the longest wait the contract allows.
type fixedRand struct{}

func (fixedRand) Float64() float64 { return 1 - 1e-9 }

func contractTestCmd(env Env) *cobra.Command {
	var (
		respFile string
		status   int
		headers  []string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "test FILE|NAME [--response BODY.json]",
		Short: "Show what pollwarden would conclude from a saved status answer, without sending anything",
		Long: `test reads a saved status answer (a body, its HTTP code, its headers) through
the contract exactly as a live answer is read, and prints the state and its
category, the provider's own value, the result fields and their validation,
the hints accepted or rejected, any rate-limit signal and the decision. The
answer is judged as the first one of a new operation. Nothing is sent.
--response is required unless the contract's status method is HEAD, whose
answer is its headers (give them with --header). Exit 0 whenever the answer was understood, whatever the outcome.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ex, err := env.loadContract(args[0])
			if err != nil {
				return err
			}
			var body []byte
			switch {
			case respFile == "" && ex.Spec().Status.Method == http.MethodHead:
				// A HEAD answer has no body: its headers are the answer.
			case respFile == "":
				return usage(fmt.Errorf("--response is required (a file holding the answer's body)"))
			default:
				if body, err = readResponse(env, respFile); err != nil {
					return usage(err)
				}
			}
			h := http.Header{}
			for _, kv := range headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return usage(fmt.Errorf("--header %q: want NAME:VALUE", kv))
				}
				h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			if status < 100 || status > 599 {
				return usage(fmt.Errorf("--status %d: want an HTTP status code (100 to 599)", status))
			}
			rep, err := judge(ex, status, h, body, env.clock().Now())
			if err != nil {
				return usage(err)
			}
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printReport(env.Stdout, ex.Spec(), rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&respFile, "response", "", "file holding the answer's body (- for standard input; not needed for a HEAD contract)")
	cmd.Flags().IntVar(&status, "status", 200, "the answer's HTTP status code")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "an answer header NAME:VALUE (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the conclusion as JSON")
	return cmd
}

func readResponse(env Env, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(env.Stdin)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--response: %w", err)
	}
	return b, nil
}

// judge runs the controller's reading of an answer and the decision core
// on a fresh operation, with nothing sent and nothing stored.
func judge(ex *contract.Loaded, status int, h http.Header, body []byte, now time.Time) (*testReport, error) {
	ct := ex.Spec()
	op, _, err := policy.NewOperation(ct, policy.NewParams{ID: "contract-test", ProviderJobID: "contract-test"}, now)
	if err != nil {
		return nil, err
	}
	op.JitterFactor = policy.FactorMax
	op, _ = policy.CountRequest(op, ct, now)
	obs := controller.Observe(ex, prober.Replay(ct, status, h, body, now))
	st := policy.Decide(op, ct, obs, now, fixedRand{})

	b := obs.Body
	rep := &testReport{
		Contract: ct.Name, HTTPStatus: status, FromStatus: b.FromStatus,
		ProviderState: b.ProviderState, Problem: b.Problem, ProviderError: b.Error,
		RateLimit: obs.RateLimitSignal, RetryAfter: obs.RetryAfter,
	}
	if b.HasState {
		rep.State, rep.Category = b.State, policy.StateCategory(ct, b.State)
	}
	if len(ct.Result.Require) > 0 && b.HasState {
		rep.Fields = policy.CheckFields(ct.Result.Require, b.Fields)
	}
	for name, v := range map[string]any{"poll_after": b.PollAfter, "next_check_at": b.NextCheckAt, "job_expires_at": b.JobExpiresAt} {
		if v != nil {
			if rep.Hints == nil {
				rep.Hints = map[string]any{}
			}
			rep.Hints[name] = v
		}
	}
	next := st.Op
	for _, e := range st.Events {
		switch e.Kind {
		case pollwarden.EventResponseReceived:
			rep.Decision = e.Data.Decision
		case pollwarden.EventHintRejected:
			rep.HintsRejected = append(rep.HintsRejected, e.Data.Hint)
		case pollwarden.EventEscalated:
			rep.Reason, rep.Why = string(e.Data.Reason), e.Data.Detail
			for _, o := range e.Data.Options {
				rep.Options = append(rep.Options, string(o.ID))
			}
		}
	}
	switch {
	case next.Phase.Polling():
		rep.Outcome = "pending"
		rep.NextPollIn = next.NextPollAt.Sub(now).Round(time.Millisecond).String()
		rep.DelaySource = string(next.NextPollSource)
		rep.HintAccepted = next.NextPollSource == pollwarden.DelayPollHint
		if rep.Decision == "" {
			rep.Decision = "keep polling"
		}
	case next.Phase == pollwarden.PhaseEscalated:
		rep.Outcome = "escalated"

	default:
		rep.Outcome = string(next.Phase)
	}
	return rep, nil
}

func printReport(w io.Writer, ct *pollwarden.ContractSpec, r *testReport) {
	fmt.Fprintf(w, "contract %s, answer HTTP %d\n", r.Contract, r.HTTPStatus)
	switch {
	case r.State != "":
		from := ""
		if r.FromStatus {
			from = " (from the status code " + strconv.Itoa(r.HTTPStatus) + ")"
		}
		fmt.Fprintf(w, "state:           %s: %s%s\n", r.State, r.Category, from)
	case r.Problem == fmt.Sprintf("state path %q gave nothing", ct.State.Path):
		fmt.Fprintf(w, "state:           none: state path %s gives nothing in this answer\n", ct.State.Path)
	case r.Problem != "":
		fmt.Fprintf(w, "state:           none: %s\n", r.Problem)
	default:
		fmt.Fprintf(w, "state:           not read (the body of an HTTP %d is not read for a state)\n", r.HTTPStatus)
	}
	if r.ProviderState != "" {
		fmt.Fprintf(w, "provider said:   %s\n", r.ProviderState)
	}
	for i, f := range r.Fields {
		label := ""
		if i == 0 {
			label = "result fields:"
			if r.Category != "success" {
				fmt.Fprintln(w, "result fields:   (checked only in a success state)")
				label = ""
			}
		}
		fmt.Fprintf(w, "%-16s %s\n", label, f)
	}
	if len(r.ProviderError) > 0 {
		fmt.Fprintf(w, "provider error:  %s\n", r.ProviderError)
	}
	for _, name := range []string{"poll_after", "next_check_at", "job_expires_at"} {
		if v, ok := r.Hints[name]; ok {
			fmt.Fprintf(w, "hint:            %s = %v\n", name, v)
		}
	}
	if r.HintAccepted {
		fmt.Fprintln(w, "hint accepted:   the next poll follows the provider's hint")
	}
	for _, h := range r.HintsRejected {
		fmt.Fprintf(w, "hint rejected:   %s\n", h)
	}
	if r.RateLimit != "" {
		fmt.Fprintf(w, "rate limit:      %s\n", r.RateLimit)
	}
	if r.RetryAfter != "" {
		fmt.Fprintf(w, "retry after:     %s\n", r.RetryAfter)
	}
	fmt.Fprintf(w, "decision:        %s\n", r.Decision)
	switch r.Outcome {
	case "pending":
		fmt.Fprintf(w, "next poll:       in %s (%s; with the longest jitter)\n", r.NextPollIn, r.DelaySource)
	case "escalated":
		fmt.Fprintf(w, "escalation:      %s: %s\n", r.Reason, r.Why)
		fmt.Fprintf(w, "options:         %s\n", strings.Join(r.Options, ", "))
	default:
		fmt.Fprintf(w, "outcome:         %s\n", r.Outcome)
	}
}
