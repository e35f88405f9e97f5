package builtin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// TestTextractFetchRecordsPages: after a success polled with MaxResults
// 1, the aws-textract-analysis built-in fetches every page of the
// analysis by NextToken (Textract's own paged answer, see SOURCES.md) as
// one recorded action: one result_fetched event with the pages, the
// bytes and the sha256 of the JSON Lines handed over.
func TestTextractFetchRecordsPages(t *testing.T) {
	const job = "1e3b0a3b4fd2b1f0b7e4f1a3e0f8f0a1d7c3e9f5b2a4c6d8e0f1a2b3c4d5e6f7"
	dir := filepath.Join("testdata", "aws-textract-analysis")
	first, _ := os.ReadFile(filepath.Join(dir, "succeeded.json"))
	last, _ := os.ReadFile(filepath.Join(dir, "succeeded_last_page.json"))
	var page struct{ NextToken string }
	if json.Unmarshal(first, &page) != nil || page.NextToken == "" || len(last) == 0 {
		t.Fatal("fixtures: the first page needs a NextToken")
	}
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		var in struct {
			NextToken  string
			MaxResults int
		}
		_ = json.Unmarshal(b, &in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		switch {
		case in.NextToken == page.NextToken:
			_, _ = w.Write(last)
		case in.NextToken == "":
			_, _ = w.Write(first)
		default:
			w.WriteHeader(400)
			fmt.Fprint(w, `{"__type":"InvalidParameterException","Message":"bad token"}`)
		}
	}))
	t.Cleanup(srv.Close)
	ctl, ex, st := succeededRig(t, "aws-textract-analysis", srv.URL, job)
	polls := len(bodies)
	var out bytes.Buffer
	res, err := ctl.FetchResult(context.Background(), ex, "op", pollwarden.Actor{Name: "t", Role: pollwarden.RoleAgent}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, p := range [][]byte{first, last} {
		_ = json.Compact(&want, p)
		want.WriteByte('\n')
	}
	sum := sha256.Sum256(want.Bytes())
	if out.String() != want.String() || res.Pages != 2 || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("fetched %d pages, %d bytes: %q", res.Pages, res.Bytes, out.String())
	}
	if fetches := bodies[polls:]; len(fetches) != 2 || !strings.Contains(fetches[0], `"MaxResults":1000`) || strings.Contains(fetches[0], "NextToken") {
		t.Fatalf("fetch bodies %q", fetches)
	}
	events, err := st.EventList(context.Background(), "op")
	if err != nil {
		t.Fatal(err)
	}
	var done []pollwarden.Event
	for _, e := range events {
		if e.Kind == pollwarden.EventResultFetched || e.Kind == pollwarden.EventResultFetchFailed {
			done = append(done, e)
		}
	}
	if len(done) != 1 || done[0].Kind != pollwarden.EventResultFetched || done[0].Data.Pages != 2 ||
		done[0].Data.Bytes != int64(want.Len()) || done[0].Data.SHA256 != res.SHA256 {
		t.Fatalf("fetch events %+v", done)
	}
	if story := strings.Join(audit.Story(events, time.UTC), "\n"); !strings.Contains(story, fmt.Sprintf("result fetched: %d bytes in 2 pages, sha256 %s", want.Len(), res.SHA256)) {
		t.Errorf("story:\n%s", story)
	}
}
