package recordjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

// TestAppendOperationIsJSONMarshal: the stored bytes are json.Marshal's
// for every operation, and fail where it fails.
func TestAppendOperationIsJSONMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		op := opGen.Draw(t, "op")
		want, werr := json.Marshal(op)
		got, gerr := AppendOperation([]byte("prefix"), op)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("error: json.Marshal %v, AppendOperation %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("bytes differ:\n got %s\nwant %s", got[len("prefix"):], want)
		}
	})
}

// TestDecodeOperationIsJSONUnmarshal: a stored record decodes to what
// json.Unmarshal gives, and encodes back to json.Marshal's bytes for it
// (not always the record's: invalid UTF-8 comes back as U+FFFD and a
// zone of seconds as its minutes, there as here).
func TestDecodeOperationIsJSONUnmarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec, err := json.Marshal(opGen.Draw(t, "op"))
		if err != nil {
			t.Skip("not encodable")
		}
		got := checkDecode(t, string(rec))
		// Every record the encoder writes is read without encoding/json
		// (a field added to Operation but not to the decoder fails here).
		d := decoder{s: string(rec)}
		if !d.operation(new(pollwarden.Operation)) {
			t.Fatalf("fast path refused the encoder's record at byte %d: %s", d.i, rec)
		}
		again, err := AppendOperation(nil, got)
		want, _ := json.Marshal(got)
		if err != nil || !bytes.Equal(again, want) {
			t.Fatalf("round trip: %v\n got %s\nwant %s", err, again, want)
		}
	})
}

// TestDecodeOddRecords: records not written by the encoder (other cases,
// unknown keys, nulls, repeats, white space, escapes, wrong types, broken
// text) decode exactly as json.Unmarshal decodes them, error or not.
func TestDecodeOddRecords(t *testing.T) {
	names := jsonNames(reflect.TypeFor[pollwarden.Operation]())
	values := []string{`null`, `"x"`, `"a\u0026b\n\u00e9\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `1`, `-0`, `1.5`, `1e2`,
		`99999999999999999999`, `true`, `[]`, `["a","b"]`, `{}`, `{"a":"b","a":"c"}`, `{"deadline_ns":5,"max_rate_limited":2}`,
		`{"deadline_ns":1,"deadline_ns":2}`, `"2026-01-02T03:04:05.123+01:00"`, `"2026-01-02T03:04:05Z"`, `"2026-13-02T03:04:05Z"`,
		`{"id":"e","options":[]}`, `[1,`, `"\u00"`, `{"ref":"r","at":"2026-01-02T03:04:05Z"}`}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		b.WriteString(rapid.SampledFrom([]string{"{", " {\n"}).Draw(t, "open"))
		n := rapid.IntRange(0, 8).Draw(t, "n")
		for i := range n {
			if i > 0 {
				b.WriteString(rapid.SampledFrom([]string{",", " , "}).Draw(t, "comma"))
			}
			key := rapid.OneOf(rapid.SampledFrom(names), rapid.Just("unknown"), rapid.Just("Phase"), rapid.Just(`operation\u005fid`)).Draw(t, "key")
			b.WriteString(`"` + key + `":`)
			b.WriteString(rapid.SampledFrom(values).Draw(t, "value"))
		}
		b.WriteString(rapid.SampledFrom([]string{"}", "} ", "}x", ""}).Draw(t, "close"))
		checkDecode(t, b.String())
	})
}

func checkDecode(t *rapid.T, rec string) *pollwarden.Operation {
	want := new(pollwarden.Operation)
	werr := json.Unmarshal([]byte(rec), want)
	got := new(pollwarden.Operation)
	gerr := DecodeOperation(rec, got)
	if (werr != nil) != (gerr != nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("error: json.Unmarshal %v, DecodeOperation %v\n%s", werr, gerr, rec)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded differently:\n got %+v\nwant %+v\n%s", got, want, rec)
	}
	return got
}

func jsonNames(typ reflect.Type) []string {
	var names []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}
