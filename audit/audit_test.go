package audit

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

var t0 = time.Date(2030, 1, 2, 10, 20, 31, 120000000, time.UTC)

// chain builds a valid trail of n events for operation id.
func chain(id string, n int) []pollwarden.Event {
	var out []pollwarden.Event
	prev := ""
	for i := 1; i <= n; i++ {
		e := pollwarden.Event{OperationID: id, Seq: int64(i), At: t0.Add(time.Duration(i) * time.Second),
			Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: 200, RequestsUsed: i}}
		e.PrevHash = prev
		e.Hash = Hash(prev, e)
		prev = e.Hash
		out = append(out, e)
	}
	return out
}

func TestEncodeGolden(t *testing.T) {
	deadline := time.Date(2030, 1, 2, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	e := pollwarden.Event{OperationID: "op-1", Seq: 2, At: t0.In(time.FixedZone("X", -5*3600)),
		Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{State: "running", HTTPStatus: 503,
			RetryAfter: "120", DeadlineAt: &deadline, Detail: "a<b&c", ProviderError: json.RawMessage(`{"z": 1.50, "a": [true]}`)}}
	got, err := Encode("abc", e)
	if err != nil {
		t.Fatal(err)
	}
	want := `["pollwarden-audit-v1","abc","op-1",2,"2030-01-02T10:20:31.12Z","response_received",` +
		`{"deadline_at":"2030-01-02T11:00:00+01:00","detail":"a<b&c","http_status":503,"provider_error":{"a":[true],"z":1.50},` +
		`"retry_after":"120","state":"running"}]`
	if string(got) != want {
		t.Fatalf("Encode:\n got %s\nwant %s", got, want)
	}
	if h := Hash("abc", e); len(h) != 64 {
		t.Fatalf("Hash length %d", len(h))
	}
}

func TestHashIgnoresZoneButNotInstant(t *testing.T) {
	a := chain("op", 1)[0]
	b := a
	b.At = a.At.In(time.FixedZone("far", 9*3600))
	if Hash("", a) != Hash("", b) {
		t.Fatal("same instant in another zone changed the hash")
	}
	b.At = a.At.Add(time.Nanosecond)
	if Hash("", a) == Hash("", b) {
		t.Fatal("a nanosecond later kept the hash")
	}
}

func TestHashInvalidData(t *testing.T) {
	e := chain("op", 1)[0]
	e.Data.ProviderError = json.RawMessage(`{broken`)
	if h := Hash("", e); h != "" {
		t.Fatalf("Hash of unencodable data = %q, want empty", h)
	}
}

func TestVerifyChain(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func([]pollwarden.Event) []pollwarden.Event
		seq     int64 // of the reported event; 0 when valid
		problem string
	}{
		{"valid", func(e []pollwarden.Event) []pollwarden.Event { return e }, 0, ""},
		{"empty", func([]pollwarden.Event) []pollwarden.Event { return nil }, 0, ""},
		{"edited data", func(e []pollwarden.Event) []pollwarden.Event { e[2].Data.HTTPStatus = 201; return e }, 3, ProblemHash},
		{"edited time", func(e []pollwarden.Event) []pollwarden.Event { e[1].At = e[1].At.Add(time.Second); return e }, 2, ProblemHash},
		{"edited kind", func(e []pollwarden.Event) []pollwarden.Event { e[3].Kind = pollwarden.EventSucceeded; return e }, 4, ProblemHash},
		{"edited and rehashed", func(e []pollwarden.Event) []pollwarden.Event {
			e[1].Data.State = "succeeded"
			e[1].Hash = Hash(e[1].PrevHash, e[1])
			return e
		}, 3, ProblemPrevHash},
		{"deleted middle", func(e []pollwarden.Event) []pollwarden.Event { return append(e[:2], e[3:]...) }, 4, ProblemSeq},
		{"deleted first", func(e []pollwarden.Event) []pollwarden.Event { return e[1:] }, 2, ProblemSeq},
		{"deleted and renumbered", func(e []pollwarden.Event) []pollwarden.Event {
			e = append(e[:2], e[3:]...)
			e[2].Seq, e[3].Seq = 3, 4
			return e
		}, 3, ProblemPrevHash},
		{"inserted duplicate seq", func(e []pollwarden.Event) []pollwarden.Event {
			forged := pollwarden.Event{OperationID: "op", Seq: 3, At: t0, Kind: pollwarden.EventDecision, PrevHash: e[1].Hash}
			forged.Hash = Hash(forged.PrevHash, forged)
			return append(e[:2], append([]pollwarden.Event{forged}, e[2:]...)...)
		}, 3, ProblemSeq},
		{"inserted and renumbered", func(e []pollwarden.Event) []pollwarden.Event {
			forged := pollwarden.Event{OperationID: "op", Seq: 3, At: t0, Kind: pollwarden.EventDecision, PrevHash: e[1].Hash}
			forged.Hash = Hash(forged.PrevHash, forged)
			rest := append([]pollwarden.Event(nil), e[2:]...)
			for i := range rest {
				rest[i].Seq++
			}
			return append(e[:2], append([]pollwarden.Event{forged}, rest...)...)
		}, 4, ProblemPrevHash},
		{"swapped", func(e []pollwarden.Event) []pollwarden.Event { e[1], e[2] = e[2], e[1]; return e }, 3, ProblemSeq},
		{"swapped with seqs exchanged", func(e []pollwarden.Event) []pollwarden.Event {
			e[1], e[2] = e[2], e[1]
			e[1].Seq, e[2].Seq = 2, 3
			return e
		}, 2, ProblemPrevHash},
		{"moved to another operation", func(e []pollwarden.Event) []pollwarden.Event {
			other := chain("other", 1)
			e[4].OperationID = "other"
			e[4].Seq, e[4].PrevHash = 2, other[0].Hash
			return append(other, e...)
		}, 2, ProblemHash},
		{"interleaved operations", func(e []pollwarden.Event) []pollwarden.Event {
			o := chain("other", 2)
			return []pollwarden.Event{e[0], o[0], e[1], o[1], e[2], e[3], e[4]}
		}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyChain(tc.mutate(chain("op", 5)))
			if tc.problem == "" {
				if err != nil {
					t.Fatalf("VerifyChain: %v", err)
				}
				return
			}
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("VerifyChain = %v, want *ChainError", err)
			}
			if ce.Seq != tc.seq || ce.Problem != tc.problem {
				t.Fatalf("VerifyChain = %v, want seq %d %s", err, tc.seq, tc.problem)
			}
		})
	}
}

func TestVerifyHead(t *testing.T) {
	e := chain("op", 5)
	if err := VerifyHead(e, e[4].Hash); err != nil {
		t.Fatalf("full trail: %v", err)
	}
	if err := VerifyHead(e, e[2].Hash); err != nil {
		t.Fatalf("head recorded before later appends: %v", err)
	}
	var ce *ChainError
	if err := VerifyHead(e[:3], e[4].Hash); !errors.As(err, &ce) || ce.Problem != ProblemHead || ce.Seq != 3 {
		t.Fatalf("truncated tail: %v", err)
	}
	if err := VerifyHead(nil, e[0].Hash); !errors.As(err, &ce) || ce.Problem != ProblemHead {
		t.Fatalf("empty trail: %v", err)
	}
}
