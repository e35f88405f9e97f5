package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pollwarden/pollwarden/operations"
	"github.com/spf13/cobra"
)

func resultCmd(env Env) *cobra.Command {
	var store, contractArg, out, auditKey string
	cmd := &cobra.Command{
		Use:   "result OPERATION",
		Short: "Fetch a succeeded operation's result from the provider, as its own recorded action",
		Long: `result fetches the result of a succeeded operation through the contract's
result.fetch call (for example OpenAI's output file content, Anthropic's
results_url or an MCP server's tasks/result) and writes it to stdout, or
to --out FILE. A result the provider pages (Textract's NextToken) is
fetched page by page and written as JSON Lines, one page a line. The
fetch is recorded in the operation's audit before it is sent and after it
ends, with who asked, the URL, the pages, the size and the sha256 of what
was handed over.
It streams, bounded by the contract's max_bytes: a larger result is
refused. With --out the bytes go to a temporary file beside FILE that is
renamed to FILE only when the whole result arrived, so FILE never holds a
partial result; --out - is stdout. On stdout, a fetch that fails midway
exits non-zero: what was written is not the result. A second fetch is
allowed and recorded too, up to the contract's result.fetch.max_fetches
(default 3) fetches sent for the operation through every door; one more is
refused (exit 2), sends nothing and is recorded. A result holding the
contract's credential, raw or escaped, is stopped before any of it is
written.

Exit codes: 0 the whole result was handed over · 30 the fetch was sent and
did not hand over the result (the provider answered an HTTP error such as
404 or 500, the connection failed, the result was larger than max_bytes,
the result held the credential); the story records why · 2 refused before
anything was sent (the operation has not succeeded, the contract has no
result.fetch, a URL off the contract's origins, max_fetches spent) · 1
internal error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, op, contracts, err := env.operationAndContract(cmd.Context(), store, auditKey, contractArg, args[0], false)
			if err != nil {
				return err
			}
			defer st.Close()
			ops := operations.New(operations.Options{Controller: env.newController(st), Contracts: contracts, Clock: env.clock()})
			p := operations.ResultParams{Caller: env.localCaller(), ID: op.ID}
			if out == "" || out == "-" {
				_, err := ops.FetchResult(cmd.Context(), p, env.Stdout)
				return resultError(err)
			}
			return fetchToFile(cmd, ops, p, out)
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	cmd.Flags().StringVar(&contractArg, "contract", "", "contract file or name, checked against the stored contract (default: the stored contract)")
	cmd.Flags().StringVar(&out, "out", "", "write the result to this file (renamed into place only when complete) instead of stdout; - is stdout")
	cmd.Flags().StringVar(&auditKey, "audit-key", "", auditKeyHelp)
	return cmd
}

// fetchToFile writes the result to a temporary file in out's directory
// and renames it to out only when the fetch ended whole.
func fetchToFile(cmd *cobra.Command, ops *operations.Service, p operations.ResultParams, out string) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*")
	if err != nil {
		return usage(fmt.Errorf("--out: %w", err))
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	res, err := ops.FetchResult(cmd.Context(), p, tmp)
	if err != nil {
		return resultError(err)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	done = true
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d bytes to %s, sha256 %s\n", res.Bytes, out, res.SHA256)
	return nil
}

// exitResultFailed is result's exit code for a fetch that was sent and
// did not hand over the result: the provider's answer or the connection,
// not pollwarden, so neither 1 (internal error) nor one of wait's codes,
// which speak of the job.
const exitResultFailed = 30

// resultError makes a refusal (wrong phase, no result.fetch, a URL off the
// contract's origins, a contract not loaded, max_fetches spent) a usage
// error, exit 2, and a fetch that failed exit 30.
func resultError(err error) error {
	switch {
	case err == nil:
		return nil
	case operations.KindOf(err) != "":
		return usage(err)
	case errors.Is(err, operations.ErrResultFailed):
		return &exitError{code: exitResultFailed, err: err}
	}
	return err
}
