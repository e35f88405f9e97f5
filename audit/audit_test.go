package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

var t0 = time.Date(2030, 1, 2, 10, 20, 31, 120000000, time.UTC)

// chain builds a valid store-wide chain of n events, alternating between
// operations "op" and "other" (seqs counted per operation).
func chain(n int) []pollwarden.Event {
	var out []pollwarden.Event
	prev := ""
	seqs := map[string]int64{}
	for i := 1; i <= n; i++ {
		id := "op"
		if i%3 == 0 {
			id = "other"
		}
		seqs[id]++
		e := pollwarden.Event{Pos: int64(i), OperationID: id, Seq: seqs[id], At: t0.Add(time.Duration(i) * time.Second),
			Kind: pollwarden.EventResponseReceived, Data: pollwarden.EventData{HTTPStatus: 200, RequestsUsed: i}}
		e.Payload, _ = Payload(e.Data)
		e.PrevHash = prev
		e.Hash = Hash(e)
		prev = e.Hash
		out = append(out, e)
	}
	return out
}

func rehash(e *pollwarden.Event) { e.Hash = Hash(*e) }

func TestEncodeGolden(t *testing.T) {
	e := pollwarden.Event{Pos: 7, OperationID: "op-1", Seq: 2, At: t0.In(time.FixedZone("X", -5*3600)),
		Kind: pollwarden.EventResponseReceived, PrevHash: "abc", Payload: []byte(`{"a":1}`)}
	want := `19:pollwarden-audit-v2,3:abc,1:7,4:op-1,1:2,23:2030-01-02T10:20:31.12Z,17:response_received,7:{"a":1},`
	if got := string(Encode(e)); got != want {
		t.Fatalf("Encode:\n got %s\nwant %s", got, want)
	}
	// sha256 of the line above, as `printf %s LINE | sha256sum` prints it.
	if h := Hash(e); h != goldenHash {
		t.Fatalf("Hash = %s, want %s", h, goldenHash)
	}
	// The same event as appended since schema 007: the payload's digest
	// (`printf %s '{"a":1}' | sha256sum`) in place of the payload.
	e.PayloadDigest = PayloadDigest(e.Payload)
	want = `19:pollwarden-audit-v3,3:abc,1:7,4:op-1,1:2,23:2030-01-02T10:20:31.12Z,17:response_received,` +
		`64:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862,`
	if got := string(Encode(e)); got != want {
		t.Fatalf("Encode with a digest:\n got %s\nwant %s", got, want)
	}
	if h := Hash(e); h != "6f1738d8dedef2e595a29f0960048c9c80227836eee561bd3850ff18f77ece64" {
		t.Fatalf("Hash with a digest = %s", h)
	}
}

func TestPayloadCanonical(t *testing.T) {
	deadline := time.Date(2030, 1, 2, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	got, err := Payload(pollwarden.EventData{State: "running", HTTPStatus: 503, RetryAfter: "120", DeadlineAt: &deadline,
		Detail: "a<b&c", ProviderError: json.RawMessage(`{"z": 1.50, "a": [true]}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"deadline_at":"2030-01-02T11:00:00+01:00","detail":"a<b&c","http_status":503,"provider_error":{"a":[true],"z":1.50},` +
		`"retry_after":"120","state":"running"}`
	if string(got) != want {
		t.Fatalf("Payload:\n got %s\nwant %s", got, want)
	}
	if _, err := Payload(pollwarden.EventData{ProviderError: json.RawMessage(`{broken`)}); err == nil {
		t.Fatal("Payload of invalid raw JSON succeeded")
	}
}

func TestHashCoversEveryField(t *testing.T) {
	base := chain(1)[0]
	if Hash(base) != base.Hash {
		t.Fatal("hash not reproducible")
	}
	zone := base
	zone.At = base.At.In(time.FixedZone("far", 9*3600))
	if Hash(zone) != base.Hash {
		t.Fatal("same instant in another zone changed the hash")
	}
	for name, mutate := range map[string]func(*pollwarden.Event){
		"pos":       func(e *pollwarden.Event) { e.Pos++ },
		"seq":       func(e *pollwarden.Event) { e.Seq++ },
		"operation": func(e *pollwarden.Event) { e.OperationID = "op2" },
		"time":      func(e *pollwarden.Event) { e.At = e.At.Add(time.Nanosecond) },
		"kind":      func(e *pollwarden.Event) { e.Kind = pollwarden.EventSucceeded },
		"prev":      func(e *pollwarden.Event) { e.PrevHash = "x" },
		"payload":   func(e *pollwarden.Event) { e.Payload = append([]byte(nil), e.Payload...); e.Payload[2]++ },
		// Netstrings keep field boundaries: moving a byte between
		// neighbouring fields changes the hash.
		"boundary": func(e *pollwarden.Event) { e.OperationID += "1"; e.Seq = 0 },
	} {
		e := base
		mutate(&e)
		if Hash(e) == base.Hash {
			t.Errorf("changing %s kept the hash", name)
		}
	}
}

func TestVerifyChain(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func([]pollwarden.Event) []pollwarden.Event
		pos     int64 // of the reported event; 0 when valid
		problem string
	}{
		{"valid", func(e []pollwarden.Event) []pollwarden.Event { return e }, 0, ""},
		{"empty", func([]pollwarden.Event) []pollwarden.Event { return nil }, 0, ""},
		{"edited payload", func(e []pollwarden.Event) []pollwarden.Event { e[2].Payload = []byte(`{"http_status":201}`); return e }, 3, ProblemHash},
		{"edited time", func(e []pollwarden.Event) []pollwarden.Event { e[1].At = e[1].At.Add(time.Second); return e }, 2, ProblemHash},
		{"edited kind", func(e []pollwarden.Event) []pollwarden.Event { e[3].Kind = pollwarden.EventSucceeded; return e }, 4, ProblemHash},
		{"edited and rehashed", func(e []pollwarden.Event) []pollwarden.Event {
			e[1].Payload = []byte(`{"state":"succeeded"}`)
			rehash(&e[1])
			return e
		}, 3, ProblemPrevHash},
		{"deleted middle", func(e []pollwarden.Event) []pollwarden.Event { return append(e[:2], e[3:]...) }, 4, ProblemGap},
		{"deleted first", func(e []pollwarden.Event) []pollwarden.Event { return e[1:] }, 2, ProblemGap},
		{"deleted and renumbered", func(e []pollwarden.Event) []pollwarden.Event {
			e = append(e[:2], e[3:]...)
			for i := 2; i < len(e); i++ {
				e[i].Pos--
			}
			return e
		}, 3, ProblemPrevHash},
		{"inserted and renumbered", func(e []pollwarden.Event) []pollwarden.Event {
			forged := pollwarden.Event{Pos: 3, OperationID: "op", Seq: 9, At: t0, Kind: pollwarden.EventDecision, PrevHash: e[1].Hash, Payload: []byte(`{}`)}
			rehash(&forged)
			rest := append([]pollwarden.Event(nil), e[2:]...)
			for i := range rest {
				rest[i].Pos++
			}
			return append(e[:2], append([]pollwarden.Event{forged}, rest...)...)
		}, 4, ProblemPrevHash},
		{"inserted duplicate pos", func(e []pollwarden.Event) []pollwarden.Event {
			forged := pollwarden.Event{Pos: 3, OperationID: "op", Seq: 9, At: t0, Kind: pollwarden.EventDecision, PrevHash: e[1].Hash, Payload: []byte(`{}`)}
			rehash(&forged)
			return append(e[:3], append([]pollwarden.Event{forged}, e[3:]...)...)
		}, 3, ProblemOrder},
		{"swapped", func(e []pollwarden.Event) []pollwarden.Event { e[1], e[2] = e[2], e[1]; return e }, 3, ProblemGap},
		{"swapped with positions exchanged", func(e []pollwarden.Event) []pollwarden.Event {
			e[1], e[2] = e[2], e[1]
			e[1].Pos, e[2].Pos = 2, 3
			return e
		}, 2, ProblemPrevHash},
		{"moved to another operation", func(e []pollwarden.Event) []pollwarden.Event { e[4].OperationID = "other"; return e }, 5, ProblemHash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyChain(tc.mutate(chain(6)))
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
			if ce.Pos != tc.pos || ce.Problem != tc.problem {
				t.Fatalf("VerifyChain = %v, want pos %d %s", err, tc.pos, tc.problem)
			}
		})
	}
}

func TestVerifierHeadAndCheckpoints(t *testing.T) {
	e := chain(6)
	run := func(v *Verifier, evs []pollwarden.Event) error {
		for _, x := range evs {
			if err := v.Add(x); err != nil {
				return err
			}
		}
		return v.Finish()
	}
	v := &Verifier{Head: e[5].Hash}
	if err := run(v, e); err != nil || v.HeadPos() != 6 || v.Pos() != 6 || v.Hash() != e[5].Hash || v.Operations() != 2 {
		t.Fatalf("full chain: %v, head at %d, pos %d, %d operations", err, v.HeadPos(), v.Pos(), v.Operations())
	}
	if err := run(&Verifier{Head: e[2].Hash}, e); err != nil {
		t.Fatalf("head recorded before later appends: %v", err)
	}
	var ce *ChainError
	if err := run(&Verifier{Head: e[5].Hash}, e[:4]); !errors.As(err, &ce) || ce.Problem != ProblemHead || ce.Pos != 4 {
		t.Fatalf("truncated tail with head: %v", err)
	}
	if err := run(&Verifier{Head: e[0].Hash}, nil); !errors.As(err, &ce) || ce.Problem != ProblemHead {
		t.Fatalf("empty store with head: %v", err)
	}
	cp := Checkpoint{Pos: 5, Hash: e[4].Hash, What: "the anchor"}
	if err := run(&Verifier{Checkpoints: []Checkpoint{cp}}, e); err != nil {
		t.Fatalf("checkpoint inside the chain: %v", err)
	}
	if err := run(&Verifier{Checkpoints: []Checkpoint{cp}}, e[:4]); !errors.As(err, &ce) || ce.Problem != ProblemAnchor || ce.Pos != 4 {
		t.Fatalf("store ending before the checkpoint: %v", err)
	}
	forked := chain(6)
	forked[4].Payload = []byte(`{"forked":true}`)
	rehash(&forked[4])
	forked[5].PrevHash = forked[4].Hash
	rehash(&forked[5])
	if err := run(&Verifier{Checkpoints: []Checkpoint{cp}}, forked); !errors.As(err, &ce) || ce.Problem != ProblemAnchor || ce.Pos != 5 {
		t.Fatalf("rewritten history under a checkpoint: %v", err)
	}
	// Errors stick.
	v = &Verifier{}
	_ = v.Add(e[1])
	if err := v.Add(e[0]); !errors.As(err, &ce) || ce.Pos != 2 {
		t.Fatalf("first error not kept: %v", err)
	}
}

func TestVerifyOperation(t *testing.T) {
	all := chain(9)
	byPos := map[int64]string{}
	var ops []pollwarden.Event
	for _, e := range all {
		byPos[e.Pos] = e.Hash
		if e.OperationID == "op" {
			ops = append(ops, e)
		}
	}
	prev := func(pos int64) (string, bool, error) { h, ok := byPos[pos]; return h, ok, nil }
	if ce, err := VerifyOperation(ops, prev); ce != nil || err != nil {
		t.Fatalf("intact: %v %v", ce, err)
	}
	edited := append([]pollwarden.Event(nil), ops...)
	edited[2].Payload = []byte(`{"state":"x"}`)
	if ce, _ := VerifyOperation(edited, prev); ce == nil || ce.Seq != 3 || ce.Problem != ProblemHash {
		t.Fatalf("edited: %v", ce)
	}
	missing := append(append([]pollwarden.Event(nil), ops[:2]...), ops[3:]...)
	if ce, _ := VerifyOperation(missing, prev); ce == nil || ce.Seq != 4 || ce.Problem != ProblemSeq {
		t.Fatalf("missing: %v", ce)
	}
	delete(byPos, ops[3].Pos-1)
	if ce, _ := VerifyOperation(ops, prev); ce == nil || ce.Seq != 4 || ce.Problem != ProblemGap {
		t.Fatalf("predecessor deleted: %v", ce)
	}
}

func testKey(t *testing.T, b byte) *SealKey {
	t.Helper()
	raw := make([]byte, SealKeySize)
	for i := range raw {
		raw[i] = b
	}
	k, err := NewSealKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealRoundTrip(t *testing.T) {
	k := testKey(t, 1)
	e := chain(1)[0]
	e.Data = pollwarden.EventData{State: "zq-secret-state", HTTPStatus: 200}
	sealed, err := SealPayload(k, e)
	if err != nil {
		t.Fatal(err)
	}
	if !IsSealed(sealed) || json.Valid(sealed) {
		t.Fatalf("not sealed: %q", sealed)
	}
	if id, _ := SealedKeyID(sealed); id != k.KeyID() || len(id) != 16 {
		t.Fatalf("key id %q, want %q", id, k.KeyID())
	}
	again, _ := SealPayload(k, e)
	if string(again) == string(sealed) {
		t.Fatal("two seals of one payload are equal: the nonce is not random")
	}
	e.Payload = sealed
	d, err := OpenPayload(k, e)
	if err != nil || d.State != "zq-secret-state" {
		t.Fatalf("OpenPayload = %+v, %v", d, err)
	}
	if _, err := OpenPayload(nil, e); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := OpenPayload(testKey(t, 2), e); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	moved := e
	moved.OperationID = "another"
	if _, err := OpenPayload(k, moved); !errors.Is(err, ErrUnsealable) {
		t.Fatalf("payload moved to another operation: %v", err)
	}
	flipped := e
	flipped.Payload = append([]byte(nil), sealed...)
	flipped.Payload[len(sealed)-1] ^= 1
	if _, err := OpenPayload(k, flipped); !errors.Is(err, ErrUnsealable) {
		t.Fatalf("flipped byte: %v", err)
	}
	plain := e
	plain.Payload, _ = Payload(e.Data)
	if d, err := OpenPayload(k, plain); err != nil || d.State != "zq-secret-state" {
		t.Fatalf("plain payload with a key: %+v, %v", d, err)
	}
}

func TestSealKeyFile(t *testing.T) {
	body := GenerateSealKeyPEM()
	k, err := ParseSealKey(body)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := ParseSealKey(body)
	if k.KeyID() != k2.KeyID() {
		t.Fatal("key id not stable")
	}
	if _, err := ParseSealKey([]byte("not a key")); err == nil {
		t.Fatal("garbage accepted")
	}
	anchorKey, _ := GenerateAnchorKey()
	if _, err := ParseSealKey(anchorKey); err == nil {
		t.Fatal("an anchor key accepted as a sealing key")
	}
}

func TestAnchor(t *testing.T) {
	body, pub := GenerateAnchorKey()
	dir := t.TempDir()
	path := dir + "/k.pem"
	if err := writeFile(path, body); err != nil {
		t.Fatal(err)
	}
	priv, err := LoadAnchorKey(path)
	if err != nil {
		t.Fatal(err)
	}
	a := SignAnchor(priv, 42, "abc", t0)
	if err := a.Check(nil); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := a.Check(pub); err != nil {
		t.Fatalf("Check with trusted key: %v", err)
	}
	_, other := GenerateAnchorKey()
	if err := a.Check(other); err == nil {
		t.Fatal("anchor accepted under another trusted key")
	}
	for name, mutate := range map[string]func(*Anchor){
		"pos":  func(a *Anchor) { a.Pos = 41 },
		"head": func(a *Anchor) { a.Head = "abd" },
		"at":   func(a *Anchor) { a.At = a.At.Add(time.Second) },
	} {
		b := a
		mutate(&b)
		if err := b.Check(nil); err == nil {
			t.Errorf("altered %s accepted", name)
		}
	}
	if a.Checkpoint().Pos != 42 || a.Checkpoint().Hash != "abc" {
		t.Fatalf("Checkpoint %+v", a.Checkpoint())
	}
}

const goldenHash = "bf9f3be00d59ce17126a46adb609a9e5d83b6d61bbc18e52b8cd57388fec7f59"

func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }

// drawEventData draws every string, number and time of d (each left
// empty now and then), through reflection so that a new field is drawn
// too. Times come with zones, nanoseconds and, rarely, years JSON cannot
// carry.
func drawEventData(t *rapid.T, str *rapid.Generator[string], v reflect.Value) {
	zones := []*time.Location{time.UTC, time.FixedZone("", -3600), time.FixedZone("X", 5*3600+1800)}
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if name == "Options" || name == "ProviderError" || rapid.IntRange(0, 4).Draw(t, name+" empty") == 0 {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(str.Draw(t, name))
		case reflect.Int, reflect.Int64:
			f.SetInt(rapid.OneOf(rapid.Int64Range(-2, 600), rapid.Int64()).Draw(t, name))
		case reflect.Pointer:
			if f.Type() == reflect.TypeFor[*time.Time]() {
				at := time.Date(rapid.IntRange(-1, 10001).Draw(t, name+" year"), 3, 4, 5, 6, 7,
					rapid.IntRange(0, 999999999).Draw(t, name+" ns"), rapid.SampledFrom(zones).Draw(t, name+" zone"))
				f.Set(reflect.ValueOf(&at))
			} else if f.Type() == reflect.TypeFor[*pollwarden.Actor]() {
				f.Set(reflect.ValueOf(&pollwarden.Actor{Name: str.Draw(t, "actor"), Role: pollwarden.Role(str.Draw(t, "role"))}))
			} else {
				t.Fatalf("drawEventData: no generator for %s", name)
			}
		default:
			t.Fatalf("drawEventData: no generator for %s", name)
		}
	}
}

// genericPayload is Payload's generic path, always.
func genericPayload(t *rapid.T, d pollwarden.EventData) []byte {
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := canonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSortedPayload(t *testing.T) {
	// Every EventData field but Options and ProviderError must be copied
	// by sortedPayload: a fully set value must come out identical.
	at := time.Date(2030, 1, 2, 3, 4, 5, 600, time.FixedZone("Z1", 3600))
	full := pollwarden.EventData{State: "s", PrevState: "p", HTTPStatus: 1, Transport: "t", RequestID: "r", RetryAfter: "ra",
		RequestsUsed: 2, MaxRequests: 3, FailuresUsed: 4, RateLimited: 5, DeadlineAt: &at, NextPollAt: &at,
		DelaySource: "ds", Decision: "d", Reason: "re", Detail: "de", Hint: "h", Actor: &pollwarden.Actor{Name: "n", Role: "ro"},
		Option: "o", Elapsed: "e", ProviderJobID: "j", ProviderState: "ps", URL: "u", Bytes: 6, SHA256: "sh", Pages: 7, Incident: "i"}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name != "Options" && name != "ProviderError" && v.Field(i).IsZero() {
			t.Fatalf("test fixture: EventData.%s is not set; set it, and copy it in sortedPayload", name)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "<a&b>", "\u2028", "\xff", "\ufffd", `\ufffd`, "é"}))
		d := full
		drawEventData(t, str, reflect.ValueOf(&d).Elem())
		if rapid.Bool().Draw(t, "nil actor") {
			d.Actor = nil
		}
		if rapid.Bool().Draw(t, "empty") {
			d = pollwarden.EventData{Detail: d.Detail}
		}
		got, err := Payload(d)
		if _, werr := json.Marshal(d); werr != nil || err != nil {
			if (werr != nil) != (err != nil) {
				t.Fatalf("error: Payload %v, json.Marshal %v", err, werr)
			}
			return
		}
		if want := genericPayload(t, d); !bytes.Equal(got, want) {
			t.Fatalf("Payload:\n got %s\nwant %s", got, want)
		}
	})
}
