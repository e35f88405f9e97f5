package recordjson

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

// text draws the strings that test an encoder: any Unicode, HTML
// characters, the separators JSON escapes, invalid UTF-8, escapes as text.
var text = rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "<a&b>", "\u2028x\u2029", "\xff", "a\xc3", "\ufffd",
	`\ufffd`, "é", "\"q\"\\", "\x00\x1f\b\f\n\r\t", "https://p.example/jobs?id=1&b=2", "日本", "😀"}))

var zones = []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("CEST", 7200),
	time.FixedZone("", -(9*3600 + 30*60)), time.FixedZone("odd", 59)}

// timeGen draws times with zones and nanoseconds, now and then outside the
// years JSON can carry (json.Marshal then fails, and so must the encoder).
var timeGen = rapid.Custom(func(t *rapid.T) time.Time {
	year := rapid.OneOf(rapid.IntRange(1970, 2100), rapid.IntRange(0, 9999), rapid.IntRange(-5, 10005)).Draw(t, "year")
	v := time.Date(year, time.Month(rapid.IntRange(1, 12).Draw(t, "month")), rapid.IntRange(1, 31).Draw(t, "day"),
		rapid.IntRange(0, 23).Draw(t, "h"), rapid.IntRange(0, 59).Draw(t, "m"), rapid.IntRange(0, 59).Draw(t, "s"),
		rapid.OneOf(rapid.Just(0), rapid.IntRange(0, 999999999)).Draw(t, "ns"), rapid.SampledFrom(zones).Draw(t, "zone"))
	if rapid.IntRange(0, 9).Draw(t, "zero") == 0 {
		return time.Time{}
	}
	return v
})

var rawGen = rapid.SampledFrom([]json.RawMessage{nil, {}, json.RawMessage(`{"a":1}`), json.RawMessage(` { "b" : [1, 2.5e3, "<&>"] } `),
	json.RawMessage(`null`), json.RawMessage(`"x"`), json.RawMessage(`{"a":`)})

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fill sets v, field by field through reflection, so that a field added
// to Operation or to a nested record is drawn too without editing here.
func fill(t *rapid.T, v reflect.Value, name string) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(timeGen.Draw(t, name)))
		return
	case v.Type() == rawType:
		v.Set(reflect.ValueOf(rawGen.Draw(t, name)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text.Draw(t, name))
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, name))
	case reflect.Int, reflect.Int64:
		v.SetInt(rapid.OneOf(rapid.Int64Range(-3, 1000), rapid.Int64()).Draw(t, name))
	case reflect.Float64:
		v.SetFloat(rapid.OneOf(rapid.Float64(), rapid.Float64Range(0.5, 1), rapid.SampledFrom([]float64{0, 1e-7, 1e21, 123456789e-20})).Draw(t, name))
	case reflect.Pointer:
		if rapid.Bool().Draw(t, name+" nil") {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), name)
		v.Set(p)
	case reflect.Slice:
		n := rapid.IntRange(-1, 3).Draw(t, name+" len")
		if n < 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, s.Index(i), name)
		}
		v.Set(s)
	case reflect.Map:
		n := rapid.IntRange(-1, 5).Draw(t, name+" len")
		if n < 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range n {
			m.SetMapIndex(reflect.ValueOf(text.Draw(t, name+" key")), reflect.ValueOf(text.Draw(t, name+" value")))
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), name+"."+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("fill: no generator for %s (%s)", name, v.Type())
	}
}

// opGen draws operations: mostly realistic ones (every field, valid
// text), sometimes anything.
var opGen = rapid.Custom(func(t *rapid.T) *pollwarden.Operation {
	op := new(pollwarden.Operation)
	fill(t, reflect.ValueOf(op).Elem(), "op")
	return op
})
