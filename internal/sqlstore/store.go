package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/recordjson"
)

var _ pollwarden.Outbox = (*Store)(nil)

// Store implements pollwarden.Store (all but Close) and pollwarden.Outbox
// over a Dialect; a driver embeds it and adds opening and closing.
type Store struct {
	d      Dialect
	x      Syntax
	name   string
	sealer audit.Sealer
	q      queries
	// g groups claims and saves (Syntax.GroupWrites); nil otherwise.
	g *grouper
	// due keeps the records due listings decoded.
	due dueCache
	// mode caches the store's sealing key id ("" = plain) once read; it
	// never changes after the first append writes it.
	modeMu    sync.Mutex
	mode      string
	modeKnown bool
}

// New is the store over d, sealing event payloads with sealer when set.
func New(d Dialect, sealer audit.Sealer) *Store {
	x := d.Syntax()
	s := &Store{d: d, x: x, name: x.Name, sealer: sealer, q: buildQueries(x)}
	if x.GroupWrites {
		slots := inFlight
		if !x.HeadRow {
			slots = 1
		}
		s.g = newGrouper(slots)
	}
	return s
}

// recordCols are the operations columns written from an Operation, in the
// order recordArgs returns their values. The lease columns are not among
// them: a save never touches the lease.
var recordCols = []string{
	"contract", "provider_job_id", "status_url", "credential_name", "fingerprint",
	"phase", "reason", "started_at", "deadline_at", "next_poll_at", "finished_at",
	"status_requests_used", "max_status_requests", "transport_failures_used",
	"max_transport_failures", "rate_limited_used", "max_rate_limited",
	"completed_polls", "version", "owner", "held_by", "record",
}

// headCols read the chain's head as two more columns of the query that a
// write already makes about its operation, saving a statement per write
// (statements, not the two index seeks, are what cost in SQLite).
const headCols = `coalesce((SELECT pos FROM events ORDER BY pos DESC LIMIT 1), 0),
	coalesce((SELECT hash FROM events ORDER BY pos DESC LIMIT 1), '')`

// seqCol reads the last seq of the operation whose row the query reads:
// one seek in the (operation_id, seq) index. (coalesce(max(seq), 0) would
// defeat SQLite's min/max optimisation and read every entry of the
// operation.)
const seqCol = `coalesce((SELECT seq FROM events WHERE operation_id = operations.id ORDER BY seq DESC LIMIT 1), 0)`

// leaseCols are the lease as stored beside the record.
const leaseCols = "lease_owner, lease_epoch, lease_expires_at"

// queries are the statements every write runs, built once per dialect.
type queries struct {
	insert string
	// insertLeased is insert that also writes the lease columns: a create
	// with its first claim (OperationCreateClaim).
	insertLeased string
	// up are the UPDATEs of saves and claims (see indexedCols).
	up updates
	// save and saveChain read what a save checks (and, with events,
	// where they go); claim also reads the record.
	save, saveChain, claim string
	// groupSave, groupSaveChain and groupClaim read the same columns of
	// many rows in one statement (see groupRead), where groups are run
	// under the database's one write lock (no Syntax.HeadRow).
	groupSave, groupSaveChain, groupClaim string
}

// insertQuery inserts an operation's row with its record columns and
// extra columns (their placeholders in extraVals), unless the id is taken.
func insertQuery(x Syntax, extraCols, extraVals string) string {
	cols, vals := "id, ", "?"
	if x.CreatedOrder != "" {
		cols, vals = "id, created_order, ", "?, "+x.CreatedOrder
	}
	return "INSERT INTO operations (" + cols + strings.Join(recordCols, ", ") + extraCols + ") VALUES (" + vals +
		strings.Repeat(", ?", len(recordCols)) + extraVals + ") ON CONFLICT (id) DO NOTHING"
}

func buildQueries(x Syntax) queries {
	var q queries
	q.insert = insertQuery(x, "", "")
	q.insertLeased = insertQuery(x, ", "+leaseCols, ", ?, ?, ?")
	q.up = buildUpdates()
	chain := seqCol
	if !x.HeadRow {
		chain = headCols + ", " + seqCol
	}
	indexed := strings.Join(indexedCols[:], ", ")
	q.save = "SELECT version, " + leaseCols + ", " + indexed + " FROM operations WHERE id = ?" + x.ForUpdate
	q.saveChain = "SELECT version, " + leaseCols + ", " + indexed + ", " + chain + " FROM operations WHERE id = ?" + x.ForUpdate
	// A claim passes a row another writer has locked (SkipLocked, where
	// rows are locked one at a time): whoever holds it is working on the
	// operation, so the claim is refused as if the lease were held instead
	// of queueing behind it (see lockedByAnother).
	lock := x.ForUpdate
	if x.SkipLocked != "" {
		lock = x.SkipLocked
	}
	q.claim = "SELECT version, record, " + leaseCols + ", " + indexed + ", " + chain + " FROM operations WHERE id = ?" + lock
	if !x.HeadRow {
		// A missing row reads as NULLs: the columns that cannot be NULL
		// read as zeros instead, and the first column says it is missing.
		safe := make([]string, len(indexedCols))
		for i, c := range indexedCols {
			safe[i] = "coalesce(" + c + ", '')"
		}
		cols := "coalesce(version, 0), lease_owner, coalesce(lease_epoch, 0), lease_expires_at, " + strings.Join(safe, ", ")
		q.groupSave = groupRead(cols)
		q.groupSaveChain = groupRead(cols + ", " + chain)
		q.groupClaim = groupRead("coalesce(version, 0), coalesce(record, ''), lease_owner, coalesce(lease_epoch, 0), lease_expires_at, " +
			strings.Join(safe, ", ") + ", " + chain)
	} else {
		q.groupSave = lockedGroupRead(indexed, "")
		q.groupSaveChain = lockedGroupRead(indexed, chain)
	}
	return q
}

// chainDest are the scan destinations of the chain columns of saveChain
// and claim.
func (s *Store) chainDest(cs *Chain) []any {
	if s.x.HeadRow {
		return []any{&cs.Seq}
	}
	return []any{&cs.Pos, &cs.Hash, &cs.Seq}
}

// recordArgs encodes op as it will be stored. The JSON record is the source
// of truth on read; the columns copy it for queries.
func recordArgs(op *pollwarden.Operation) ([]any, error) {
	// A record fits the stack buffer most of the time: the string made
	// of it is then the encoding's only allocation.
	var buf [2048]byte
	rec, err := recordjson.AppendOperation(buf[:0], op)
	if err != nil {
		return nil, fmt.Errorf("%w: encode record: %v", pollwarden.ErrInvalid, err)
	}
	return []any{
		op.Contract, op.ProviderJobID, op.StatusURL, op.CredentialName, op.Fingerprint,
		string(op.Phase), string(op.Reason), FormatTime(op.StartedAt), FormatTime(op.DeadlineAt),
		FormatTime(op.NextPollAt), formatTimePtr(op.FinishedAt),
		op.StatusRequestsUsed, op.MaxStatusRequests, op.TransportFailuresUsed,
		op.MaxTransportFailures, op.RateLimitedUsed, op.MaxRateLimited,
		op.CompletedPolls, op.Version, op.Owner, heldBy(op), string(rec),
	}, nil
}

// heldBy is the held_by column of op: the incident that holds it now,
// only while it waits with the delay source provider_incident (a record
// keeps HeldBy after the hold is over; the column must not).
func heldBy(op *pollwarden.Operation) string {
	if op.Phase != pollwarden.PhaseWaiting || op.NextPollSource != pollwarden.DelayProviderIncident {
		return ""
	}
	return op.HeldBy
}

// decodeRecord reads a stored record; the version column is authoritative.
// The operation's strings may share rec's memory.
func decodeRecord(version int64, rec string) (*pollwarden.Operation, error) {
	op := new(pollwarden.Operation)
	if err := recordjson.DecodeOperation(rec, op); err != nil {
		return nil, fmt.Errorf("decode stored record: %w", err)
	}
	op.Version = version
	return op, nil
}

func scanOp(row Row) (*pollwarden.Operation, error) {
	var version int64
	var rec string
	if err := row.Scan(&version, &rec); err != nil {
		return nil, err
	}
	return decodeRecord(version, rec)
}

// scanOpRow reads one operation's row into dest: ErrNotFound when there
// is none.
func scanOpRow(ctx context.Context, tx Querier, query, id string, dest ...any) error {
	err := tx.QueryRow(ctx, query, id).Scan(dest...)
	if errors.Is(err, ErrNoRows) {
		return pollwarden.ErrNotFound
	}
	return err
}

// readLocked is scanOpRow for a write, which locks the row it reads, and
// then the lease clock's time: every lease decision of the write is made
// at that instant.
func (s *Store) readLocked(ctx context.Context, tx Querier, query, id string, caller time.Time, dest ...any) (time.Time, error) {
	if err := scanOpRow(ctx, tx, query, id, dest...); err != nil {
		return time.Time{}, err
	}
	return s.d.LeaseNow(ctx, tx, caller)
}

// fail prefixes err with the driver's name and what failed.
func (s *Store) fail(err error, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", s.name, fmt.Sprintf(format, args...), err)
}

// OperationCreate stores op with Version 1 (whatever op.Version was) and its
// first events. On success op.Version is 1 and events are numbered from 1.
// A concurrent create of the same id inserts nothing and fails with
// ErrExists; a pruned operation's id fails with ErrPruned.
func (s *Store) OperationCreate(ctx context.Context, op *pollwarden.Operation, events []pollwarden.Event) error {
	return s.create(ctx, op, events, nil)
}

// create is OperationCreate keeping c (when set) in the same transaction.
func (s *Store) create(ctx context.Context, op *pollwarden.Operation, events []pollwarden.Event, c *pollwarden.StoredContract) error {
	if op == nil || op.ID == "" {
		return fmt.Errorf("%s: create operation: %w: empty operation id", s.name, pollwarden.ErrInvalid)
	}
	rec := *op
	rec.Version = 1
	args, err := recordArgs(&rec)
	if err != nil {
		return s.fail(err, "create operation %q", op.ID)
	}
	evs, err := prepareEvents(s.sealer, op.ID, events)
	if err != nil {
		return s.fail(err, "create operation %q", op.ID)
	}
	err = s.d.Write(ctx, func(tx Querier) error {
		n, err := tx.Exec(ctx, s.q.insert, append([]any{op.ID}, args...)...)
		if err != nil {
			return err
		}
		if n == 0 {
			return pollwarden.ErrExists
		}
		if c != nil {
			if err := putContract(ctx, tx, c); err != nil {
				return err
			}
		}
		cs, err := s.createdChain(ctx, tx, op.ID, len(evs) > 0)
		if err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, op.ID, cs, evs)
	})
	if err != nil {
		return s.fail(err, "create operation %q", op.ID)
	}
	op.Version = 1
	publishEvents(events, evs)
	return nil
}

// createdChain reads where a created operation's events go (the head
// too when events are appended where the head has no row of its own),
// and fails with ErrPruned when the id is a pruned operation's.
func (s *Store) createdChain(ctx context.Context, tx Querier, id string, events bool) (Chain, error) {
	var cs Chain
	if events && !s.x.HeadRow {
		// The head and the operation's last seq in one statement:
		// statements are what a SQLite write costs.
		if err := tx.QueryRow(ctx, createChainQuery, id).Scan(&cs.Pos, &cs.Hash, &cs.Seq); err != nil {
			return cs, err
		}
	} else if err := tx.QueryRow(ctx, createSeqQuery, id).Scan(&cs.Seq); err != nil {
		return cs, err
	}
	if cs.Seq > 0 {
		// A pruned operation's id stays taken: its trail is still in
		// the chain, and a new owner must not read it as its own.
		return cs, pollwarden.ErrPruned
	}
	return cs, nil
}

// createSeqQuery reads the last seq of a created operation's events: any
// means the id is a pruned operation's, which stays taken.
// createChainQuery reads the chain's head with it.
const (
	createSeqQuery   = "SELECT coalesce(max(seq), 0) FROM events WHERE operation_id = ?"
	createChainQuery = "SELECT " + headCols + ", (" + createSeqQuery + ")"
)

// OperationGet returns the stored record or ErrNotFound.
func (s *Store) OperationGet(ctx context.Context, id string) (*pollwarden.Operation, error) {
	op, err := scanOp(s.d.Reader().QueryRow(ctx, "SELECT version, record FROM operations WHERE id = ?", id))
	if errors.Is(err, ErrNoRows) {
		err = pollwarden.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(err, "get operation %q", id)
	}
	return op, nil
}

// OperationSave replaces the record in one write transaction that first
// locks the operation's row, then checks the lease on the lease clock (a
// fenced-out writer gets ErrLeaseLost even if its version is also stale,
// so it stops rather than reloading and retrying), and then the version.
// On success p.Op.Version is incremented and p.Events are numbered,
// chained and appended; with p.Release the lease, checked current above,
// is freed by the same UPDATE.
func (s *Store) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	op := p.Op
	if op == nil || op.ID == "" {
		return fmt.Errorf("%s: save operation: %w: empty operation id", s.name, pollwarden.ErrInvalid)
	}
	rec := *op
	rec.Version = op.Version + 1
	args, err := recordArgs(&rec)
	if err != nil {
		return s.fail(err, "save operation %q", op.ID)
	}
	evs, err := prepareEvents(s.sealer, op.ID, p.Events)
	if err != nil {
		return s.fail(err, "save operation %q", op.ID)
	}
	kind := updateSave
	if p.Release && p.Lease != nil {
		kind = updateRelease
	}
	var version int64
	var ls storedLease
	var cs Chain
	var stored storedIndexed
	query, group, dest := s.q.save, s.q.groupSave, append([]any{&version, &ls.Owner, &ls.Epoch, &ls.Expires}, stored.dest()...)
	if len(evs) > 0 {
		query, group, dest = s.q.saveChain, s.q.groupSaveChain, append(dest, s.chainDest(&cs)...)
	}
	var key string
	if p.Quota != nil {
		key = p.Quota.Key
	}
	err = s.writeGrouped(ctx, rowWrite{
		opID: op.ID, query: query, group: group, dest: dest, caller: p.Now, chain: &cs, key: key,
		decide: func(ctx context.Context, tx Querier, found bool, now time.Time, keys *keyTx) (*Stmt, []pollwarden.Event, error) {
			if !found {
				return nil, nil, pollwarden.ErrNotFound
			}
			if err := ls.Lease().checkWriter(op.ID, p.Lease, now); err != nil {
				return nil, nil, err
			}
			if version != op.Version {
				return nil, nil, fmt.Errorf("%w: stored version %d, yours %d", pollwarden.ErrConflict, version, op.Version)
			}
			all := evs
			if p.Quota != nil {
				if err := noteKey(keys, p.Quota, now); err != nil {
					return nil, nil, err
				}
				// Last, once every check passed: the incidents the
				// answer opened or closed, and their events.
				extra, err := s.noteIncidents(ctx, tx, keys, p.Quota.Key, op, cmp.Or(p.Now, now), len(evs) > 0)
				if err != nil {
					return nil, nil, err
				}
				all = append(slices.Clip(evs), extra...)
			}
			sql, set := s.q.up.stmt(kind, &stored, args)
			return &Stmt{sql, append(set, op.ID)}, all, nil
		},
	})
	if err != nil {
		return s.fail(err, "save operation %q", op.ID)
	}
	op.Version = rec.Version
	publishEvents(p.Events, evs)
	return nil
}
