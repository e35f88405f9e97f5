package operations

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// Kind is what sort of refusal Problems are, so each door can choose its
// answer (an exit code, an HTTP status, a tool error) without reading the
// words.
type Kind string

// The kinds of refusal.
const (
	// Invalid: the input is malformed or outside what the contract allows.
	Invalid Kind = "invalid"
	// Unknown: the input names something outside the door's fixed
	// vocabulary (an incident decision's option): the request itself is
	// wrong, whatever the record says.
	Unknown Kind = "unknown"
	// NotFound: no such operation, or one the caller may not see.
	NotFound Kind = "not-found"
	// Conflict: the input is well formed but the record does not allow it
	// now (a finished operation, an id taken by another request).
	Conflict Kind = "conflict"
	// Forbidden: the caller may see the operation but not do this to it.
	Forbidden Kind = "forbidden"
	// Unauthenticated: the request carries no identity at all.
	Unauthenticated Kind = "unauthenticated"
	// Exhausted: a budget of the operation is spent (its result fetches),
	// so the request would send what the contract does not allow.
	Exhausted Kind = "exhausted"
)

// Problem is one thing wrong with a request: the field it is about (as
// the API names it; "" when it is about the whole request) and a message
// a person can act on, which names the field as the door spells it.
type Problem struct {
	Field   string
	Message string
	// Widens marks a request for more authority than the caller has (a
	// limit above the contract's): only an approver may grant it, so a
	// door can say how to ask for it.
	Widens bool
}

// Problems is a refusal: every problem found, of one Kind. Nothing was
// written when a use case returns Problems.
type Problems struct {
	Kind Kind
	List []Problem
	// ID is the stored operation the refusal is about, when there is one
	// (a resume the record refuses), so a door can show how to resume it.
	ID string
}

func (p *Problems) Error() string {
	msgs := make([]string, len(p.List))
	for i, pr := range p.List {
		msgs[i] = pr.Message
	}
	return strings.Join(msgs, "; ")
}

// add appends a problem about field.
func (p *Problems) add(field, format string, args ...any) {
	p.List = append(p.List, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// addErr appends err's message without its sentinel's prefix.
func (p *Problems) addErr(field string, err error) {
	p.List = append(p.List, Problem{Field: field, Message: trimSentinel(err)})
}

// orNil is p as an error when it holds a problem, else nil.
func (p *Problems) orNil() error {
	if len(p.List) == 0 {
		return nil
	}
	return p
}

func refuse(kind Kind, field, format string, args ...any) *Problems {
	p := &Problems{Kind: kind}
	p.add(field, format, args...)
	return p
}

// AsProblems returns the Problems in err's chain, if any.
func AsProblems(err error) (*Problems, bool) {
	return errors.AsType[*Problems](err)
}

// KindOf is the Kind of err's Problems, or "" for an error that is not a
// refusal (a store or provider failure, which a door reports as its own
// fault).
func KindOf(err error) Kind {
	if p, ok := AsProblems(err); ok {
		return p.Kind
	}
	return ""
}

// notFound is the refusal for an id that does not exist or that the
// caller may not see: the same words either way, so another agent's
// operation is not even confirmed to exist.
func notFound(id string) *Problems {
	return refuse(NotFound, "operation_id", "no operation %s", display.Clip(id))
}

// writeProblem maps an error of a controller write to Problems: a
// concurrent change, a record that no longer allows the write, or a
// forbidden decision is a refusal; anything else is returned as it is.
func writeProblem(err error, id string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pollwarden.ErrNotFound):
		return notFound(id)
	case errors.Is(err, pollwarden.ErrConflict), errors.Is(err, pollwarden.ErrLeaseHeld), errors.Is(err, pollwarden.ErrLeaseLost):
		return refuse(Conflict, "", "operation %s changed while this request was applied; read it again and retry", id)
	case errors.Is(err, pollwarden.ErrInvalid), errors.Is(err, pollwarden.ErrPhase):
		return refuse(Conflict, "", "%s", trimSentinel(err))
	case errors.Is(err, pollwarden.ErrForbidden):
		return refuse(Forbidden, "", "%s", trimSentinel(err))
	}
	return err
}

// trimSentinel is err's message without the sentinel's prefix, which says
// nothing to a caller that the Kind does not.
func trimSentinel(err error) string {
	msg := err.Error()
	for _, s := range []error{pollwarden.ErrInvalid, pollwarden.ErrPhase, pollwarden.ErrForbidden} {
		msg = strings.TrimPrefix(msg, s.Error()+": ")
	}
	return msg
}
