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
		Description:  `Fetch the result of a succeeded operation from the provider through the contract's result.fetch call (e.g. OpenAI's output file, Anthropic's results JSONL), and return it as text. Allowed only once the operation's phase is succeeded; earlier it is refused and nothing is sent. Each call is a new provider request, recorded in the operation's audit with its size and sha256. A result that is not UTF-8 text, or larger than ` + fmt.Sprint(maxInlineResult>>10) + ` KiB, is not returned: the answer tells its size and digest, and how a person can fetch it (pollwarden result, or GET /v1/operations/{id}/result).`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
		OutputSchema: outputSchema[ResultAnswer](),
	}, textOnly(s.getResult))
}

// getResult fetches into a buffer that keeps at most maxInlineResult
// bytes and counts the rest.
func (s *server) getResult(ctx context.Context, _ *sdk.CallToolRequest, in GetResultIn) (*sdk.CallToolResult, ResultAnswer, error) {
	op, err := s.get(ctx, in.OperationID)
	if err != nil {
		return nil, ResultAnswer{}, err
	}
	var buf cappedBuffer
	res, err := s.ops.FetchResult(ctx, operations.ResultParams{Caller: s.who(ctx), ID: op.ID}, &buf)
	switch {
	case errors.Is(err, operations.ErrResultFailed):
		return nil, ResultAnswer{}, err
	case err != nil:
		return nil, ResultAnswer{}, toolError(err)
	}
	ans := ResultAnswer{OperationID: op.ID, Bytes: res.Bytes, SHA256: res.SHA256, URL: res.URL}
	if buf.over || !utf8.Valid(buf.b.Bytes()) {
		what := "is not UTF-8 text"
		if buf.over {
			what = fmt.Sprintf("is larger than the %d bytes an answer here carries", maxInlineResult)
		}
		return nil, ResultAnswer{}, fmt.Errorf("the result of %s was fetched (%d bytes, sha256 %s, recorded in the audit) but %s; a person can fetch it with `pollwarden result %s --out FILE` or GET /v1/operations/%s/result",
			op.ID, res.Bytes, res.SHA256, what, op.ID, op.ID)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: buf.b.String()}}}, ans, nil
}

// cappedBuffer keeps the first maxInlineResult bytes written and notes
// that more came; it never refuses a write, so the fetch runs to its end
// and its size and digest are recorded.
type cappedBuffer struct {
	b    bytes.Buffer
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxInlineResult - c.b.Len(); room > 0 {
		if len(p) > room {
			c.b.Write(p[:room])
			c.over = true
		} else {
			c.b.Write(p)
		}
	} else if len(p) > 0 {
		c.over = true
	}
	return len(p), nil
}
