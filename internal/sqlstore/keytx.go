package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pollwarden/pollwarden"
)

// keyTx holds the quota key rows one write transaction locked: the
// writes of a group under one key decide one after another on the same
// row, and the row is written once, after every decision. Rows are
// locked after the operations' rows and in key order, so two groups
// never wait for each other's keys in a cycle.
type keyTx struct {
	rows map[string]*keyRow
}

// keyRow is one locked key row: as read (version 0 when there was none
// yet), decoded when first asked for, and whether a decision changed it.
type keyRow struct {
	version int64
	state   string
	found   bool
	ks      *pollwarden.KeyState
	changed bool
}

// keyPlaceholder makes sure a key's row exists before it is locked, so
// that two transactions taking from a new key cannot both read "none"
// (a row that is not there cannot be locked). Version 0 marks a row no
// decision wrote yet: the views do not show it.
const keyPlaceholder = "INSERT INTO quota_keys (key, version, state, updated_at) VALUES (?, 0, '{}', '') ON CONFLICT (key) DO NOTHING"

// keysOf are the distinct quota keys of writes, sorted.
func keysOf(ws []rowWrite) []string {
	var keys []string
	for _, w := range ws {
		if w.key != "" && !slices.Contains(keys, w.key) {
			keys = append(keys, w.key)
		}
	}
	slices.Sort(keys)
	return keys
}

// keyReads are the locking reads of keys' rows, to run after the
// operations' rows were locked.
func (s *Store) keyReads(kt *keyTx, keys []string) []LockedRead {
	reads := make([]LockedRead, 0, len(keys))
	for _, k := range keys {
		r := &keyRow{}
		kt.rows[k] = r
		reads = append(reads, LockedRead{SQL: keyRead + s.x.ForUpdate, Args: []any{k}, Dest: []any{&r.version, &r.state}, NoClock: true})
	}
	return reads
}

// newKeyTx is an empty set of locked key rows.
func newKeyTx() *keyTx { return &keyTx{rows: map[string]*keyRow{}} }

// lockKeys locks and reads the rows of keys in tx (see keyTx). Where
// rows are locked one at a time, a key without a row first gets one (a
// second round trip, once per key's life).
func (s *Store) lockKeys(ctx context.Context, tx Querier, kt *keyTx, keys []string, reads []LockedRead) error {
	var missing []string
	for i, k := range keys {
		if kt.rows[k].found = reads[i].Found; !reads[i].Found && s.x.ForUpdate != "" {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	again := make([]LockedRead, 0, 2*len(missing))
	for _, k := range missing {
		again = append(again, LockedRead{SQL: keyPlaceholder, Args: []any{k}, NoClock: true})
	}
	again = append(again, s.keyReads(kt, missing)...)
	if err := s.readMany(ctx, tx, again); err != nil {
		return err
	}
	for i, k := range missing {
		r := again[len(missing)+i]
		if kt.rows[k].found = r.Found; !r.Found {
			return errors.New("lock quota key " + k + ": no row after its insert")
		}
	}
	return nil
}

// lockKeysAlone reads and locks the keys of writes with their own
// statements: for the runners that read the operations' rows without
// LockedRead batches.
func (s *Store) lockKeysAlone(ctx context.Context, tx Querier, ws []rowWrite) (*keyTx, error) {
	kt := newKeyTx()
	keys := keysOf(ws)
	if len(keys) == 0 {
		return kt, nil
	}
	reads := s.keyReads(kt, keys)
	if err := s.readMany(ctx, tx, reads); err != nil {
		return nil, err
	}
	return kt, s.lockKeys(ctx, tx, kt, keys, reads)
}

// get is the key's row as decided so far: NewKeyState when none was
// written. It fails for a key the transaction did not lock.
func (kt *keyTx) get(key string) (*pollwarden.KeyState, error) {
	r, ok := kt.rows[key]
	if !ok {
		return nil, errors.New("quota key " + key + " was not locked by this write")
	}
	if r.ks == nil {
		if !r.found || r.version == 0 {
			r.ks = pollwarden.NewKeyState(key)
		} else {
			ks, err := decodeKey(r.version, r.state)
			if err != nil {
				return nil, err
			}
			r.ks = ks
		}
		r.ks.Key = key
	}
	return r.ks, nil
}

// set keeps ks as the key's row, to be written with the transaction.
func (kt *keyTx) set(ks *pollwarden.KeyState) {
	r := kt.rows[ks.Key]
	ks.Version = r.version
	r.ks, r.changed = ks, true
}

// stmts are the writes of the changed rows, in key order.
func (kt *keyTx) stmts(out []Stmt) ([]Stmt, error) {
	keys := make([]string, 0, len(kt.rows))
	for k, r := range kt.rows {
		if r.changed {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		r := kt.rows[k]
		st, err := keyWrite(r.ks, r.version)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// noteKey lets a save's answer teach its key's row (SaveParams.Quota).
func noteKey(keys *keyTx, q *pollwarden.QuotaNote, now time.Time) error {
	ks, err := keys.get(q.Key)
	if err != nil {
		return err
	}
	if next := q.Note(ks, now); next != nil {
		next.Key = q.Key
		keys.set(next)
	}
	return nil
}

// heldClaim is what a claim writes when its key held the request: the
// wait recorded (Claim without a lease) and its record's arguments.
type heldClaim struct {
	Claim
	args []any
}

// takeKey asks the claim's key whether the request cl reserved may go
// (ClaimParams.Quota). ok false: nothing is written (Held returned no
// record). A nil heldClaim with ok: the request goes, the key's row
// changed as Grant said. Otherwise the request is held: the key's row
// keeps the wait, and the claim writes the returned record instead of
// the reservation, without a lease.
func (s *Store) takeKey(keys *keyTx, p pollwarden.ClaimParams, read *pollwarden.Operation, cl *Claim, now time.Time) (*heldClaim, bool, error) {
	ks, err := keys.get(p.Quota.Key)
	if err != nil {
		return nil, false, err
	}
	next, g := p.Quota.Grant(ks, cl.Op, now)
	if g.OK {
		if next != nil {
			next.Key = p.Quota.Key
			keys.set(next)
		}
		return nil, true, nil
	}
	if !p.Now.IsZero() {
		// The caller schedules on its own clock.
		g.Until = g.Until.Add(p.Now.Sub(now))
	}
	op, events := p.Quota.Held(read.Clone(), g)
	if op == nil {
		*cl = Claim{}
		return nil, false, nil
	}
	if op.ID != read.ID || op.Version != read.Version {
		return nil, false, fmt.Errorf("%w: the held record is for operation %q version %d, the record read is %q version %d",
			pollwarden.ErrInvalid, op.ID, op.Version, read.ID, read.Version)
	}
	prepared, err := prepareEvents(s.sealer, read.ID, events)
	if err != nil {
		return nil, false, err
	}
	rec := *op
	rec.Version++
	args, err := recordArgs(&rec)
	if err != nil {
		return nil, false, err
	}
	if next != nil {
		next.Key = p.Quota.Key
		keys.set(next)
	}
	return &heldClaim{Claim: Claim{Op: &rec, Events: events, Prepared: prepared}, args: args}, true, nil
}
