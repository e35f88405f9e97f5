package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/pollwarden/pollwarden/operations"
)

// The error codes of {"error": {"code", "message"}}. They are part of the
// API: a client branches on the code, a person reads the message.
const (
	codeInvalidJSON      = "invalid_json"
	codeUnknownField     = "unknown_field"
	codeUnprocessable    = "unprocessable"
	codeBadRequest       = "bad_request"
	codeNotFound         = "not_found"
	codeConflict         = "conflict"
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeTooLarge         = "too_large"
	codeMethodNotAllowed = "method_not_allowed"
	codeInternal         = "internal"
	codeBadGateway       = "bad_gateway"
	codeExhausted        = "budget_exhausted"
)

// apiError is an answer that is not a success: the HTTP status, the code
// and a message that names the problem (and never a secret: messages are
// built from the request, the record and the contract, none of which holds
// one).
type apiError struct {
	status  int
	code    string
	message string
	// cause is logged, never sent: it may say more than a caller should
	// see about the server.
	cause error
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func unprocessable(format string, args ...any) *apiError {
	return errorf(http.StatusUnprocessableEntity, codeUnprocessable, format, args...)
}

func conflict(format string, args ...any) *apiError {
	return errorf(http.StatusConflict, codeConflict, format, args...)
}

func internal(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error; see the server log", cause: err}
}

// problem answers a use case's error: its Problems by their kind, and
// anything else as an internal error whose detail stays in the log.
func problem(err error) error {
	p, ok := operations.AsProblems(err)
	if !ok {
		return internal(err)
	}
	switch p.Kind {
	case operations.NotFound:
		return errorf(http.StatusNotFound, codeNotFound, "%s", p.Error())
	case operations.Conflict:
		return conflict("%s", p.Error())
	case operations.Forbidden:
		return errorf(http.StatusForbidden, codeForbidden, "%s", p.Error())
	case operations.Unauthenticated:
		return errorf(http.StatusUnauthorized, codeUnauthorized, "%s", p.Error())
	case operations.Unknown:
		return errorf(http.StatusBadRequest, codeBadRequest, "%s", p.Error())
	case operations.Exhausted:
		return errorf(http.StatusTooManyRequests, codeExhausted, "%s", p.Error())
	}
	return unprocessable("%s", p.Error())
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers err; anything that is not an *apiError is an
// internal error whose detail stays in the log.
func writeError(w http.ResponseWriter, err error) *apiError {
	ae, ok := errors.AsType[*apiError](err)
	if !ok {
		ae = internal(err)
	}
	var b errorBody
	b.Error.Code, b.Error.Message = ae.code, ae.message
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pollwarden"`)
	}
	writeJSON(w, ae.status, b)
	return ae
}

// writeJSON answers v as indented JSON: answers are read by people as
// often as by programs.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"cannot encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
