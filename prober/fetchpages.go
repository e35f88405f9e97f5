package prober

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// fetchPages reads each answer within the bound, checks it for the
// provider's error and its next page, and writes it.
func (p *Prober) fetchPages(ctx context.Context, c *pollwarden.ContractSpec, req FetchRequest, auth *authorizer, secrets []string, w io.Writer) (resp FetchResponse) {
	f := c.ResultFetch
	timeout := fetchTimeout(c)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := sha256.New()
	defer func() { resp.SHA256 = hex.EncodeToString(h.Sum(nil)) }()
	token := ""
	for {
		if f.Paged() && resp.Pages >= f.MaxPages {
			resp.Problem = fmt.Sprintf("the result has more than the contract's max_pages %d pages; stopped, not a whole result", f.MaxPages)
			return resp
		}
		rawURL, body, err := req.Page(token)
		if err != nil {
			resp.Problem = err.Error()
			return resp
		}
		r, problem := p.fetchOne(ctx, c, req, rawURL, body, auth, &resp)
		if problem != "" {
			resp.Problem = problem
			return resp
		}
		left := f.MaxBytes - resp.Bytes
		raw, err := io.ReadAll(io.LimitReader(r.Body, left+1))
		r.Body.Close()
		switch {
		case err != nil:
			_, detail := classify(ctx, err, timeout)
			resp.Problem = "reading the result: " + detail
			return resp
		case int64(len(raw)) > left:
			resp.TooLarge = true
			resp.Problem = fmt.Sprintf("the result passed the contract's max_bytes %d; stopped, not a whole result", f.MaxBytes)
			return resp
		}
		if isEventStream(r.Header.Get("Content-Type")) {
			raw = eventStreamJSON(raw)
		}
		next, problem := contract.ResultPage(c, raw)
		if problem != "" {
			resp.Problem = problem
			return resp
		}
		if f.Paged() {
			var line bytes.Buffer
			if err := json.Compact(&line, raw); err != nil {
				resp.Problem = "a page of the result is not JSON"
				return resp
			}
			raw = append(line.Bytes(), '\n')
			if resp.Bytes+int64(len(raw)) > f.MaxBytes {
				resp.TooLarge = true
				resp.Problem = fmt.Sprintf("the result passed the contract's max_bytes %d; stopped, not a whole result", f.MaxBytes)
				return resp
			}
		}
		if err := holdsSecret(raw, secrets); err != nil {
			resp.Problem = err.Error()
			return resp
		}
		if _, err := w.Write(raw); err != nil {
			resp.Problem = "writing the result: " + err.Error()
			return resp
		}
		resp.Written = resp.Written || len(raw) > 0
		h.Write(raw)
		resp.Bytes += int64(len(raw))
		if !f.Paged() {
			return resp
		}
		resp.Pages++
		switch {
		case next == "":
			return resp
		case next == token:
			resp.Problem = "the provider gave the same next page twice; stopped, not a whole result"
			return resp
		}
		token = next
	}
}
