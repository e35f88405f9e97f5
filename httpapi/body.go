package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// maxBody bounds every request body. The largest legitimate body (a
// decision note, a justification) is a few hundred bytes; 64 KiB leaves
// room without letting a client make the server buffer megabytes.
const maxBody = 64 << 10

// decodeBody reads exactly one JSON object into v, strictly: an unknown
// field is a mistake in the client (a misspelt "max_status_request" would
// otherwise silently take the contract's default), not something to
// ignore. Malformed JSON and unknown fields are 400, a string that is not
// UTF-8 422 naming its field, a body over maxBody 413, so that nothing is
// stored from a request the server did not fully understand.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength > maxBody {
		return tooLarge()
	}
	body := http.MaxBytesReader(w, r.Body, maxBody)
	data, err := io.ReadAll(body)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge()
		}
		return errorf(http.StatusBadRequest, codeInvalidJSON, "cannot read the request body: %v", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return errorf(http.StatusBadRequest, codeInvalidJSON, "the request body is empty; expected a JSON object")
	}
	// Before decoding, which would turn bytes that are not UTF-8 into
	// U+FFFD and so keep, as an id, text the client never sent.
	if err := pollwarden.CheckJSONText(data); err != nil {
		return unprocessable("%s", pollwarden.RefusalText(err))
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, codeInvalidJSON, "the request body holds more than one JSON value")
	}
	return nil
}

// optionalBody is decodeBody for a route whose body may be absent.
func optionalBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	err := decodeBody(w, r, v)
	if ae, ok := errors.AsType[*apiError](err); ok && ae.code == codeInvalidJSON && strings.Contains(ae.message, "is empty") {
		return nil
	}
	return err
}

func tooLarge() error {
	return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "the request body is larger than %d KiB", maxBody>>10)
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errorf(http.StatusBadRequest, codeInvalidJSON, "malformed JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return errorf(http.StatusBadRequest, codeInvalidJSON, "the request body must be a JSON object, not %s", typ.Value)
		}
		return errorf(http.StatusBadRequest, codeInvalidJSON, "field %q must be %s, not %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, codeInvalidJSON, "malformed JSON: the body ends early")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errorf(http.StatusBadRequest, codeUnknownField, "unknown field %s", name)
	}
	return errorf(http.StatusBadRequest, codeInvalidJSON, "malformed JSON: %v", err)
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64":
		return "an integer"
	case "ptr":
		return "a value of another type"
	}
	return fmt.Sprintf("a %s", k)
}
