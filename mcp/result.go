package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden/operations"
)

// ToolGetResult fetches a succeeded job's result.
const ToolGetResult = "get_result"

// maxInlineResult is the largest result get_result hands back in its
// answer: an MCP answer lands in a model's context, where a bigger one
// does more harm than good. A larger result is still fetched whole (so
// its size and digest are known and recorded) but not returned.
const maxInlineResult = 256 << 10

// GetResultIn names the operation whose result to fetch.
type GetResultIn struct {
	OperationID string `json:"operation_id" jsonschema:"the operation_id watch_job returned"`
}

// ResultAnswer describes the result handed back as the text content.
type ResultAnswer struct {
	OperationID string `json:"operation_id"`
	Bytes       int64  `json:"bytes" jsonschema:"the result's size in bytes"`
	SHA256      string `json:"sha256" jsonschema:"the sha256 of the result, as recorded in the audit"`
	URL         string `json:"url" jsonschema:"where it was fetched from, without query"`
}

func (s *server) addResult(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolGetResult,
		Title:        "Fetch a succeeded job's result",
		Description:  `Fetch the result of a succeeded operation from the provider through the contract's result.fetch call (e.g. OpenAI's output file, Anthropic's results JSONL), and return it as text. Allowed only once the operation's phase is succeeded; earlier it is refused and nothing is sent. Each call is a new provider request, recorded in the operation's audit with its size and sha256. A result that is not UTF-8 text is not returned (the answer tells its size and digest); one larger than ` + fmt.Sprint(maxInlineResult>>10) + ` KiB is stopped there, not downloaded whole. Either way the answer says how a person can fetch it (pollwarden result, or GET /v1/operations/{id}/result). The contract's result.fetch.max_fetches bounds the fetches sent for one operation through every door; one more is refused.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
		OutputSchema: outputSchema[ResultAnswer](),
	}, textOnly(s.getResult))
}

// getResult fetches into a buffer that keeps at most maxInlineResult
// bytes: one byte more stops the fetch, so a large result is not
// downloaded only to be dropped.
func (s *server) getResult(ctx context.Context, _ *sdk.CallToolRequest, in GetResultIn) (*sdk.CallToolResult, ResultAnswer, error) {
	op, err := s.get(ctx, in.OperationID)
	if err != nil {
		return nil, ResultAnswer{}, err
	}
	var buf cappedBuffer
	res, err := s.ops.FetchResult(ctx, operations.ResultParams{Caller: s.who(ctx), ID: op.ID}, &buf)
	switch {
	case buf.over:
		return nil, ResultAnswer{}, fmt.Errorf("the result of %s is larger than the %d bytes an answer here carries, so its fetch was stopped there (recorded in the audit); a person can fetch it whole with `pollwarden result %s --out FILE` or GET /v1/operations/%s/result",
			op.ID, maxInlineResult, op.ID, op.ID)
	case errors.Is(err, operations.ErrResultFailed):
		return nil, ResultAnswer{}, err
	case err != nil:
		return nil, ResultAnswer{}, toolError(err)
	}
	ans := ResultAnswer{OperationID: op.ID, Bytes: res.Bytes, SHA256: res.SHA256, URL: res.URL}
	if !utf8.Valid(buf.b.Bytes()) {
		return nil, ResultAnswer{}, fmt.Errorf("the result of %s was fetched (%d bytes, sha256 %s, recorded in the audit) but is not UTF-8 text; a person can fetch it with `pollwarden result %s --out FILE` or GET /v1/operations/%s/result",
			op.ID, res.Bytes, res.SHA256, op.ID, op.ID)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: buf.b.String()}}}, ans, nil
}

// errInlineFull stops a fetch whose result will not fit an answer.
var errInlineFull = fmt.Errorf("the result is larger than the %d bytes an MCP answer carries", maxInlineResult)

// cappedBuffer keeps the first maxInlineResult bytes written; a write past
// them is refused, which stops the fetch there.
type cappedBuffer struct {
	b    bytes.Buffer
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if len(p) > maxInlineResult-c.b.Len() {
		c.over = true
		return 0, errInlineFull
	}
	return c.b.Write(p)
}
