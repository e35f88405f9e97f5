package pollwarden

import (
	"context"
	"time"
)

// Store keeps operation records, their audit events and their leases.
// Implementations must be safe for concurrent use by several goroutines and,
// for the SQLite driver, several processes sharing one file. Every write
// that changes a record appends its events in the same transaction.
type Store interface {
	// OperationCreate stores a new record (Version 0 becomes 1) with its
	// first events. It fails with ErrExists if the id is taken.
	OperationCreate(ctx context.Context, op *Operation, events []Event) error
	// OperationGet returns the record or ErrNotFound.
	OperationGet(ctx context.Context, id string) (*Operation, error)
	// OperationList returns records, newest first (oldest due first with
	// p.DueBefore), filtered by p.
	OperationList(ctx context.Context, p ListParams) ([]*Operation, error)
	// OperationSave replaces the record if its stored version is still
	// op.Version (else ErrConflict) and, when lease is non-nil, that lease
	// is still current and unexpired at now (else ErrLeaseLost). Without a
	// lease, the save fails with ErrLeaseHeld while another owner holds an
	// unexpired lease. The lease is checked before the version, so a writer
	// whose lease was lost always learns that (and stops) rather than
	// reloading and retrying. A lease is held while now < ExpiresAt, now
	// being the lease clock (see LeaseParams.Now). On success op.Version is
	// incremented and the events are appended.
	OperationSave(ctx context.Context, p SaveParams) error
	// LeaseRelease frees the lease if l is still current; releasing a lost
	// lease is not an error.
	LeaseRelease(ctx context.Context, l *Lease) error
	// OperationClaim takes the lease (if it is free or expired on the
	// lease clock, with the next epoch), reloads the record under it and
	// applies the caller's change to it (R22), in one write transaction: a
	// step's change is its request counted before it leaves (R11), a
	// cancel's is the cancel recorded before it is sent, a submission's the
	// send recorded. A step then costs two writes (this and its decision
	// saved with SaveParams.Release) instead of four. If the lease is held
	// on the lease clock (see LeaseParams.Now) it fails with ErrLeaseHeld
	// and writes nothing. Otherwise it reads the record as stored and calls
	// p.Change with it (see ClaimParams.Have for a caller's copy standing
	// for it). When Change returns a record, that record (its Version as
	// read) and its events are saved and the lease taken with the next
	// epoch, together; OperationClaim returns the saved record (Version
	// incremented) and the lease. When Change returns nil, nothing is
	// written, no lease is taken, and OperationClaim returns the record as
	// read and a nil lease.
	OperationClaim(ctx context.Context, p ClaimParams) (*Operation, *Lease, error)
	// OperationCreateClaim is OperationCreate (or, with p.Contract,
	// OperationCreateUnder) followed by OperationClaim of the new record,
	// in ONE write transaction: the record, its first events, the change
	// p.Claim.Change makes to it (a step's reservation, R11), the lease
	// (epoch 1) and the quota take commit together or not at all, so an
	// API create that may poll at once costs one write before its request
	// instead of two. Change and Quota mean what they mean for
	// OperationClaim, with the record as created (Version 1) as the record
	// read; p.Claim.Have is ignored. It returns what OperationClaim would:
	// the saved record and the lease; a held quota's wait with a nil lease;
	// or, when Change took nothing, the created record and a nil lease. It
	// fails with ErrExists or ErrPruned, writing nothing, as a create does.
	// On success p.Op.Version is 1 and p.Events are numbered.
	OperationCreateClaim(ctx context.Context, p CreateClaimParams) (*Operation, *Lease, error)
	// EventList returns an operation's events in order (by Seq), with Data
	// decoded from the stored payload and Payload holding the stored bytes;
	// none and no error for an unknown operation. It fails when a payload
	// cannot be decoded, e.g. a sealed payload without the right key.
	EventList(ctx context.Context, operationID string) ([]Event, error)
	// EventScan returns at most p.Limit stored events with Pos > p.AfterPos
	// in chain order (by Pos), only those of p.OperationID when it is set.
	// The events are raw: Payload holds the stored bytes and Data is left
	// empty, so a chain can be walked, a page at a time and in bounded
	// memory, without the key of a sealed store. Limit <= 0 means a
	// driver-chosen page size, never "all".
	EventScan(ctx context.Context, p EventScanParams) ([]Event, error)
	// AuditHead returns the position and hash of the last event of the
	// store-wide chain; 0 and "" when the store holds no events.
	AuditHead(ctx context.Context) (pos int64, hash string, err error)
	// KeyList returns the row of every quota key written so far, by key.
	KeyList(ctx context.Context) ([]KeyState, error)
	// KeyGet returns the row of one quota key, or ErrNotFound when none
	// was written (a key nothing took from yet: NewKeyState stands for it).
	KeyGet(ctx context.Context, key string) (*KeyState, error)
	// Close releases the store's resources.
	Close() error
	ContractKeeper
	IncidentKeeper
}

// ListParams filters OperationList. Zero values mean "any".
type ListParams struct {
	Phase Phase
	// Phases, when set, keeps only the operations in one of these phases
	// (the unfinished ones, say), in one query before Limit.
	Phases []Phase
	Limit  int
	// Owner, when set, keeps only the operations whose Owner is exactly
	// this: an agent's list is filtered in the store, before Limit, so it
	// is never a page of someone else's operations cut down in memory.
	Owner string
	// DueBefore, when set, selects the work a scheduler may claim: only
	// operations in phase waiting whose NextPollAt is at or before
	// DueBefore, and whose lease is not held at DueBefore (a step is
	// working on them), ordered by NextPollAt ascending (oldest due first)
	// instead of newest first. Limit applies; Phase, if also set, must
	// match too.
	DueBefore time.Time
	// Contract and ProviderJobID, when set, keep only the operations of
	// that contract and that provider job id (both exactly): how a
	// provider callback finds the operations it wakes.
	Contract      string
	ProviderJobID string
	// Reason, when set, keeps only the operations with this reason, and
	// Text only those whose id, provider job id, contract or last provider
	// state contains it, ignoring case: a person's search, filtered in the
	// store before Limit, so a page is never cut down in memory.
	Reason Reason
	Text   string
	// HeldBy, when set, keeps only the operations that provider incident
	// holds now (waiting, with the delay source provider_incident): how a
	// decision finds them, through an index, however many wait.
	HeldBy string
}

// EventScanParams selects the events EventScan returns.
type EventScanParams struct {
	// AfterPos: only events with a greater Pos (0: from the start).
	AfterPos int64
	// Limit caps the page (<= 0: the driver's default page size).
	Limit int
	// OperationID, when set: only that operation's events.
	OperationID string
}

// SaveParams is the input of OperationSave.
type SaveParams struct {
	Op     *Operation
	Lease  *Lease
	Events []Event
	// Now is the caller's clock; see LeaseParams.Now for which clock
	// checks the lease.
	Now time.Time
	// Release frees Lease in the same transaction as the save (the epoch
	// is kept), so that a step's last write also ends its ownership. The
	// save checks the lease first, so only the current lease is ever
	// released this way; a lost lease still fails with ErrLeaseLost.
	// Ignored without a Lease.
	Release bool
	// Quota, when set, writes what the answer taught about its key (a
	// rate limit's hold, the provider's remaining count) to the key's row
	// in the same transaction, after the record's checks passed: the
	// answer and its lesson are durable together.
	Quota *QuotaNote
}

// ClaimParams is the input of OperationClaim: the lease asked for, and
// the change to make to the record under it.
type ClaimParams struct {
	OperationID string
	Owner       string
	// Now is the caller's clock: SQLite judges the lease with it,
	// PostgreSQL with the database's clock (see LeaseParams.Now). Whether
	// the change is due is Change's to decide, on the caller's time.
	Now time.Time
	TTL time.Duration
	// Change sees the record (a copy it may keep) and returns the record
	// to save, with Version left as read, and its events; or nil to take
	// nothing. Only its answer for the record as stored under the lease is
	// ever written. It may run more than once (a driver may retry a busy
	// transaction, or run it on Have first) and may run inside the store's
	// write transaction, so it must be quick and decide from its argument
	// alone, e.g. policy.Gate then policy.CountRequest.
	Change func(op *Operation) (*Operation, []Event)
	// Have, when set, is the caller's copy of the record. A driver may run
	// Change on it before the transaction and, if the stored version is
	// still Have.Version under the lease (every change of a record
	// increments its version, so the stored record is then Have), write
	// that answer without decoding the stored record again; otherwise it
	// runs Change on the record as stored. Either way the answer written
	// is Change's for the current record.
	Have *Operation
	// Quota, when set, takes the request Change reserved from the shared
	// quota of its key, in the same transaction: once Change returned a
	// record, the driver locks the key's row, asks Quota.Grant, and
	// writes the row it returns. When the request is held, nothing of the
	// reservation is written and no lease is taken: the record Quota.Held
	// returns (the wait) is saved instead, and OperationClaim returns it
	// with a nil lease. Grant decides on the lease clock (the database's
	// on PostgreSQL, so replicas with skewed clocks share one timeline);
	// the Until given to Held is moved onto the caller's clock.
	Quota *QuotaTake
}

// CreateClaimParams is the input of OperationCreateClaim: the record to
// create with its first events (and the contract it runs under, when
// set), and the claim to make on it in the same write; Claim.OperationID
// must be Op.ID.
type CreateClaimParams struct {
	Op       *Operation
	Events   []Event
	Contract *StoredContract
	Claim    ClaimParams
}

// LeaseParams is the input of the drivers' LeaseAcquire, which takes a
// lease without a change: not part of Store (no step needs it), it is
// there for an embedder that holds an operation away from schedulers by
// hand. Its Now documents, for every lease decision, which clock decides.
type LeaseParams struct {
	OperationID string
	Owner       string
	// Now is the caller's clock. Which clock decides a lease (held or
	// free, its expiry, a fenced save) depends on the driver: SQLite
	// serves one machine and uses Now (its own clock when zero), so a
	// controller's fake clock also drives its leases; PostgreSQL serves
	// replicas on many machines and always uses the database's clock,
	// ignoring Now, so a replica whose clock runs ahead cannot take a lease
	// another replica still holds.
	Now time.Time
	TTL time.Duration
}

// Pruner is a Store that can remove finished operations' records while
// keeping the audit chain verifiable: each pruned event keeps its place,
// kind, time and hashes, and only its payload is dropped (docs/audit.md,
// "Pruning"). Both SQL drivers implement it.
type Pruner interface {
	// OperationPrune removes the records of the operations that finished
	// (succeeded, failed, cancelled or expired) before p.FinishedBefore,
	// each with its events' payloads, in transactions of a bounded size.
	// A waiting, submitting, escalated or cancelling operation is never
	// pruned. A pruned operation's id stays taken: OperationCreate under
	// it fails with ErrPruned.
	OperationPrune(ctx context.Context, p PruneParams) (PruneResult, error)
}

// PruneParams is the input of OperationPrune.
type PruneParams struct {
	FinishedBefore time.Time
	// DryRun counts what would be pruned and changes nothing.
	DryRun bool
}

// PruneResult says what OperationPrune removed (or, with DryRun, would).
type PruneResult struct {
	Operations int64
	Events     int64
}

// ManyClaimer is a Store that claims several operations in one write: a
// scheduler that starts many steps at once claims them together, so their
// leases, reservations, quota and events cost one transaction (one commit,
// one lock of the chain head) instead of one each. Both SQL drivers
// implement it; a caller falls back to OperationClaim without it.
type ManyClaimer interface {
	// OperationClaimMany makes each claim of ps exactly as OperationClaim
	// would (the same checks, Change and Quota), in as few transactions
	// as the driver can (one for up to 64 operations), and returns each
	// one's result at its index. A claim refused on its own (its lease
	// held, its row being written by another transaction, its change
	// invalid) fails alone and writes nothing; the others still commit.
	// Claims of one operation given twice are made one after the other.
	OperationClaimMany(ctx context.Context, ps []ClaimParams) []ClaimResult
}

// ClaimResult is one claim's result in OperationClaimMany: what
// OperationClaim would have returned.
type ClaimResult struct {
	Op    *Operation
	Lease *Lease
	Err   error
}
