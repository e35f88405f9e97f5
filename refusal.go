package pollwarden

import (
	"errors"
	"fmt"
)

// Refusal is a rule's "no", carried as data from where it is decided
// (policy, the controller, a check in this package) to the door that
// answers it: its kind, the request field it is about and the words for
// a person. A door chooses its status or exit code by the kind and shows
// the message as it is, instead of stripping a sentinel's prefix off
// wrapped text. errors.Is(r, r.Kind) holds, so callers that test for a
// sentinel keep working.
type Refusal struct {
	// Kind is the sentinel the refusal is of: ErrInvalid, ErrPhase or
	// ErrForbidden.
	Kind error
	// Field is the request field it is about, as the API names it
	// ("option", "deadline", "operation_id"), or "" for the whole
	// request.
	Field string
	// Message says what is wrong and what would be accepted, without the
	// kind's name.
	Message string
}

// Refuse is a Refusal of kind about field, its message formatted.
func Refuse(kind error, field, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Error is the kind's name before the message, as a log reads it.
func (r *Refusal) Error() string { return r.Kind.Error() + ": " + r.Message }

// Unwrap is the refusal's kind, so errors.Is matches its sentinel.
func (r *Refusal) Unwrap() error { return r.Kind }

// AsRefusal is the Refusal in err's chain, if any.
func AsRefusal(err error) (*Refusal, bool) {
	return errors.AsType[*Refusal](err)
}

// RefusalText is the words a person reads for err: a refusal's message
// without its kind's name, or any other error's text as it is.
func RefusalText(err error) string {
	if r, ok := AsRefusal(err); ok {
		return r.Message
	}
	return err.Error()
}
