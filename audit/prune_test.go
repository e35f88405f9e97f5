package audit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// prune drops the payloads of op's events, as a store's prune does.
func prune(events []pollwarden.Event, op string) []pollwarden.Event {
	out := append([]pollwarden.Event(nil), events...)
	for i := range out {
		if out[i].OperationID == op {
			out[i].Payload, out[i].Data = []byte(PrunedPayload), pollwarden.EventData{}
		}
	}
	return out
}

// TestVerifyPruned: a chain whose pruned events kept their hashes
// verifies, and what is left still shows every kind of tampering.
func TestVerifyPruned(t *testing.T) {
	pruned := prune(chain(10), "other") // pos 3, 6, 9
	var v Verifier
	for _, e := range pruned {
		if err := v.Add(e); err != nil {
			t.Fatalf("pruned chain: %v", err)
		}
	}
	if err := v.Finish(); err != nil || v.Pruned() != 3 || v.Pos() != 10 {
		t.Fatalf("pruned chain: %v, %d pruned, pos %d", err, v.Pruned(), v.Pos())
	}
	for name, tc := range map[string]struct {
		edit func([]pollwarden.Event) []pollwarden.Event
		pos  int64
		want string
	}{
		"kept event edited": {func(es []pollwarden.Event) []pollwarden.Event {
			es[3].Payload = []byte(`{"http_status":500}`)
			return es
		}, 4, ProblemHash},
		"pruned event's hash replaced": {func(es []pollwarden.Event) []pollwarden.Event {
			es[2].Hash = strings.Repeat("0", 64)
			return es
		}, 4, ProblemPrevHash},
		"pruned event deleted": {func(es []pollwarden.Event) []pollwarden.Event {
			return append(es[:5:5], es[6:]...)
		}, 7, ProblemGap},
		"kept event emptied as if pruned, then rehashed": {func(es []pollwarden.Event) []pollwarden.Event {
			es[4].Payload = []byte(PrunedPayload)
			es[4].Hash = Hash(es[4])
			return es
		}, 6, ProblemPrevHash},
	} {
		t.Run(name, func(t *testing.T) {
			err := VerifyChain(tc.edit(append([]pollwarden.Event(nil), pruned...)))
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Pos != tc.pos || ce.Problem != tc.want {
				t.Fatalf("got %v, want %s at pos %d", err, tc.want, tc.pos)
			}
		})
	}
}

// TestStoryPruned: a run of pruned events is one line that says what
// happened to them; the events after it are told as usual.
func TestStoryPruned(t *testing.T) {
	kept := pollwarden.Event{At: t0.Add(time.Hour), Kind: pollwarden.EventFinished, Data: pollwarden.EventData{State: "failed"}}
	lost := pollwarden.Event{At: t0, Kind: pollwarden.EventRequestSent, Payload: []byte(PrunedPayload)}
	got := Story([]pollwarden.Event{lost, lost, lost, kept}, time.UTC)
	if len(got) != 2 || !strings.HasSuffix(got[0], "3 events pruned: the record was removed, the chain keeps their hashes") {
		t.Fatalf("story: %q", got)
	}
	if d, err := OpenPayload(nil, lost); err != nil || d.State != "" {
		t.Fatalf("OpenPayload of a pruned event: %+v %v", d, err)
	}
}

// digestChain is chain(n) as a store appends it now: each event keeps its
// payload's digest and its hash covers the digest.
func digestChain(n int) []pollwarden.Event {
	out := chain(n)
	prev := ""
	for i := range out {
		out[i].PayloadDigest = PayloadDigest(out[i].Payload)
		out[i].PrevHash = prev
		rehash(&out[i])
		prev = out[i].Hash
	}
	return out
}

// TestVerifyPrunedBound: a pruned event that kept its payload digest is
// rehashed from what the prune kept, so rewriting its kind, time or
// digest is a hash mismatch at that event; a digest cannot be dropped
// to fall back to the older rule, nor a kept payload edited under it.
func TestVerifyPrunedBound(t *testing.T) {
	pruned := prune(digestChain(10), "other") // pos 3, 6, 9
	if err := VerifyChain(pruned); err != nil {
		t.Fatalf("pruned chain: %v", err)
	}
	if Hash(pruned[0]) == Hash(chain(1)[0]) {
		t.Fatal("an event with a digest hashes as one without")
	}
	for name, tc := range map[string]struct {
		edit func([]pollwarden.Event)
		pos  int64
	}{
		"pruned event's kind rewritten":   {func(es []pollwarden.Event) { es[5].Kind = pollwarden.EventDecision }, 6},
		"pruned event's time rewritten":   {func(es []pollwarden.Event) { es[5].At = es[5].At.Add(-time.Hour) }, 6},
		"pruned event's digest rewritten": {func(es []pollwarden.Event) { es[5].PayloadDigest = es[4].PayloadDigest }, 6},
		"pruned event's digest removed":   {func(es []pollwarden.Event) { es[5].PayloadDigest = "" }, 6},
		"kept payload edited":             {func(es []pollwarden.Event) { es[3].Payload = []byte(`{"http_status":500}`) }, 4},
		"kept payload and digest edited, as if pruned": {func(es []pollwarden.Event) {
			es[3].Payload = []byte(`{"http_status":500}`)
			es[3].PayloadDigest = PayloadDigest(es[3].Payload)
		}, 4},
	} {
		t.Run(name, func(t *testing.T) {
			es := append([]pollwarden.Event(nil), pruned...)
			tc.edit(es)
			var ce *ChainError
			if err := VerifyChain(es); !errors.As(err, &ce) || ce.Pos != tc.pos || ce.Problem != ProblemHash {
				t.Fatalf("got %v, want %s at pos %d", err, ProblemHash, tc.pos)
			}
			if ce, err := VerifyOperation(opEvents(es, es[tc.pos-1].OperationID), func(pos int64) (string, bool, error) {
				return es[pos-1].Hash, true, nil
			}); err != nil || ce == nil || ce.Pos != tc.pos || ce.Problem != ProblemHash {
				if name != "pruned event's digest removed" {
					t.Fatalf("VerifyOperation: %v %v, want %s at pos %d", ce, err, ProblemHash, tc.pos)
				}
			}
		})
	}
	// An older store: events without digests, then events with them.
	mixed := chain(4)
	prev := mixed[3].Hash
	for _, e := range digestChain(3) {
		e.Pos += 4
		e.PrevHash = prev
		rehash(&e)
		prev = e.Hash
		mixed = append(mixed, e)
	}
	if err := VerifyChain(prune(mixed, "other")); err != nil {
		t.Fatalf("a store upgraded mid-chain: %v", err)
	}
}

func opEvents(es []pollwarden.Event, op string) []pollwarden.Event {
	var out []pollwarden.Event
	for _, e := range es {
		if e.OperationID == op {
			out = append(out, e)
		}
	}
	return out
}
