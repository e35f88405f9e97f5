package pollwarden

import "errors"

// Sentinel errors shared by stores and doors; test with errors.Is.
var (
	// ErrNotFound: no operation with that id.
	ErrNotFound = errors.New("operation not found")
	// ErrExists: an operation with that id is already stored.
	ErrExists = errors.New("operation already exists")
	// ErrConflict: the record changed since it was read (version mismatch).
	ErrConflict = errors.New("operation changed concurrently")
	// ErrLeaseHeld: another owner holds an unexpired lease.
	ErrLeaseHeld = errors.New("lease held by another owner")
	// ErrLeaseLost: the writer's lease expired or was taken over.
	ErrLeaseLost = errors.New("lease lost")
	// ErrForbidden: the actor's role may not make this decision.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: input that names its own problem; wrapped with detail.
	ErrInvalid = errors.New("invalid")
	// ErrPhase: the input is well formed but the operation's phase does
	// not allow it now (an extension request on a finished operation);
	// a door answers it as a conflict with the caller's view of the record.
	ErrPhase = errors.New("not allowed in this phase")
	// ErrPruned: the id is a pruned operation's. Its record is gone but
	// its trail stays in the chain, so the id stays taken: a create under
	// it fails, and no door tells it from an id someone else holds.
	ErrPruned = errors.New("operation id belongs to a pruned operation")
	// ErrQuotaHeld: a credentialed request (a cancel, a result fetch) was
	// held back by its key's shared quota or learned hold for longer than
	// the caller waits; nothing was sent or recorded. The error says until
	// when; a door answers it as "try again later".
	ErrQuotaHeld = errors.New("held by the shared quota")
	// ErrIncidentHeld: such a request was held back by an open provider
	// incident under its key. It is an ErrQuotaHeld (errors.Is), so a
	// door answers it alike, but its words name the incident.
	ErrIncidentHeld error = incidentHeld{}
)

// incidentHeld is ErrIncidentHeld's type: its own words, matching
// ErrQuotaHeld.
type incidentHeld struct{}

func (incidentHeld) Error() string        { return "held by a provider incident" }
func (incidentHeld) Is(target error) bool { return target == ErrQuotaHeld }
