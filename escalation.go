package pollwarden

import "time"

// Escalation asks a person for a bounded decision (R19): what happened, what
// it cost so far, and the options with their cost and new limits. It never
// carries a secret or a raw log.
type Escalation struct {
	// ID names this question, one per escalation and per call awaiting
	// approval, so a decision answers the question its approver saw and a
	// stale one is refused. "esc-N", N counting the operation's
	// escalations: unique per operation, not a secret.
	ID      string    `json:"id"`
	Reason  Reason    `json:"reason"`
	Message string    `json:"message"`
	Options []Option  `json:"options"`
	At      time.Time `json:"at"`
	// Reminders counts the reminders recorded for this escalation.
	Reminders int `json:"reminders,omitempty"`
	// RemindedPeriod is the reminder period (a whole number of
	// remind_after since At) the last reminder was sent in: missed periods
	// collapse into one reminder, numbered after the last one sent.
	RemindedPeriod int `json:"reminded_period,omitempty"`
	// ExpiredAt is set when the request expired undecided; the contract's
	// default is being (or has been) applied.
	ExpiredAt *time.Time `json:"expired_at,omitempty"`
	// Decided is the answer that closed this question while the record
	// keeps it (an abandon): who decided what, and when. Message then
	// says the same instead of the question.
	Decided *DecisionRecord `json:"decided,omitempty"`
}

// DecisionRecord is who answered which question, with what, and when.
type DecisionRecord struct {
	Escalation string    `json:"escalation,omitempty"`
	Option     string    `json:"option"`
	By         Actor     `json:"by"`
	At         time.Time `json:"at"`
	// Outcome says in words what the decision did.
	Outcome string `json:"outcome"`
}

// RefusedCredential is the keyed fingerprint of the credential a provider
// refused (401/403): HMAC-SHA256 under a key drawn for this refusal, never
// the secret nor a plain hash of it. A read compares it with the
// credential's current value to offer retry_credential.
type RefusedCredential struct {
	// Ref is the contract's secret reference (env:NAME, file:PATH).
	Ref string    `json:"ref"`
	Key string    `json:"key"`
	MAC string    `json:"mac"`
	At  time.Time `json:"at"`
}

// Option is one bounded choice offered by an escalation. ExtraTime and
// ExtraStatusRequests state the cost; NewDeadline and NewMaxStatusRequests
// the limit it would set. GrantsAuthority marks options only an approver
// may choose (R20).
type Option struct {
	ID                   string     `json:"id"`
	Label                string     `json:"label"`
	ExtraTime            string     `json:"extra_time,omitempty"`
	ExtraStatusRequests  int        `json:"extra_status_requests,omitempty"`
	NewDeadline          *time.Time `json:"new_deadline,omitempty"`
	NewMaxStatusRequests int        `json:"new_max_status_requests,omitempty"`
	GrantsAuthority      bool       `json:"grants_authority"`
}

// The option identifiers an escalation may offer.
const (
	OptionExtend        = "extend"
	OptionCancel        = "cancel_at_provider"
	OptionInspect       = "inspect_console"
	OptionAbandon       = "abandon"
	OptionApproveCall   = "approve_call"
	OptionAcceptPending = "treat_as_pending"
	// OptionRetryCredential allows one status request with a credential
	// that differs from the refused one; it is judged when the operation
	// is read, never stored among the options.
	OptionRetryCredential = "retry_credential"
)

// Role says what an actor may do. Only approvers and admins grant authority.
type Role string

// The roles.
const (
	RoleAgent    Role = "agent"
	RoleApprover Role = "approver"
	RoleAdmin    Role = "admin"
)

// CanGrant reports whether the role may make decisions that grant new
// authority (R20).
func (r Role) CanGrant() bool { return r == RoleApprover || r == RoleAdmin }

// Actor is who asks for or makes a decision, by name only.
type Actor struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}
