package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
)

const eventCols = "pos, operation_id, seq, at, kind, payload, prev_hash, hash, payload_digest"

// maxEventRows bounds the rows of one multi-row event INSERT: a write's
// events (one to three for a step) go in one statement, a long run of
// them in chunks, so the prepared forms stay a small fixed set.
const maxEventRows = 8

// insertEvents are the INSERTs of 1 to maxEventRows events (index: rows
// minus one).
var insertEvents = func() (q [maxEventRows]string) {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
	values := row
	for i := range q {
		q[i] = "INSERT INTO events (" + eventCols + ") VALUES " + values
		values += ", " + row
	}
	return q
}()

// eventStmts inserts evs, already linked, as few statements: each
// statement's cost (binding, stepping, resetting; a pipeline entry on
// PostgreSQL) is paid once for up to maxEventRows events, not per event.
func eventStmts(stmts []Stmt, opID string, evs []pollwarden.Event) []Stmt {
	for len(evs) > 0 {
		n := min(len(evs), maxEventRows)
		args := make([]any, 0, 9*n)
		for i := range evs[:n] {
			e := &evs[i]
			args = append(args, e.Pos, opID, e.Seq, FormatTime(e.At), string(e.Kind), e.Payload, e.PrevHash, e.Hash, e.PayloadDigest)
		}
		stmts = append(stmts, Stmt{insertEvents[n-1], args})
		evs = evs[n:]
	}
	return stmts
}

// insertEventArrays inserts every event of appends, already linked, in one
// statement of unnested arrays (Syntax.EventArrays), in order of pos.
const insertEventArrays = "INSERT INTO events (" + eventCols + ") SELECT * FROM unnest(?::bigint[], ?::text[], ?::bigint[], " +
	"?::text[], ?::text[], ?::bytea[], ?::text[], ?::text[], ?::text[])"

// appendStmts inserts the events of appends, already linked: one
// statement for them all where the dialect takes arrays, else a few per
// write (eventStmts).
func (s *Store) appendStmts(stmts []Stmt, appends []queuedAppend) []Stmt {
	if !s.x.EventArrays {
		for _, a := range appends {
			stmts = eventStmts(stmts, a.opID, a.evs)
		}
		return stmts
	}
	n := 0
	for _, a := range appends {
		n += len(a.evs)
	}
	pos, seq := make([]int64, 0, n), make([]int64, 0, n)
	ops, at, kind, prev, hash := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	digest := make([]string, 0, n)
	payload := make([][]byte, 0, n)
	for _, a := range appends {
		for i := range a.evs {
			e := &a.evs[i]
			pos, ops, seq = append(pos, e.Pos), append(ops, a.opID), append(seq, e.Seq)
			at, kind, payload = append(at, FormatTime(e.At)), append(kind, string(e.Kind)), append(payload, e.Payload)
			prev, hash = append(prev, e.PrevHash), append(hash, e.Hash)
			digest = append(digest, e.PayloadDigest)
		}
	}
	return append(stmts, Stmt{insertEventArrays, []any{pos, ops, seq, at, kind, payload, prev, hash, digest}})
}

// appendEvents places evs after cs and inserts them as the last
// statements of the caller's write transaction (with its COMMIT where the
// driver can, see Committer: nothing may follow them), which read cs.Seq
// under the operation's row lock. Where
// the chain's head has its own row (Syntax.HeadRow) it is locked here and
// moved with the inserts: its lock, held until the commit, makes appends
// from every process sharing the database run one at a time, so pos is
// gap-free; lock order is always operation row, then chain head, so
// writers cannot deadlock. Otherwise the transaction holds the database's
// only write lock and cs.Pos and cs.Hash were read under it.
func (s *Store) appendEvents(ctx context.Context, tx Querier, opID string, cs Chain, evs []pollwarden.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if s.x.HeadRow {
		if err := s.lockHead(ctx, tx, &cs); err != nil {
			return err
		}
	}
	// Under the write lock: two first appends cannot both record a mode.
	if err := s.checkSealMode(ctx, tx); err != nil {
		return err
	}
	locked := cs.Pos
	for i := range evs {
		cs.link(&evs[i])
	}
	if s.x.HeadRow {
		s.g.headSeen(locked, cs.Pos)
	}
	stmts := s.appendStmts(make([]Stmt, 0, 2), []queuedAppend{{opID: opID, evs: evs}})
	if s.x.HeadRow {
		stmts = append(stmts, s.headStmt(cs))
	}
	if err := batchCommit(ctx, tx, stmts); err != nil {
		return errAppend(err)
	}
	return nil
}

// headLock reads the chain's head row (Syntax.HeadRow); followed by
// ForUpdate, it locks it until the commit.
const headLock = "SELECT pos, hash FROM audit_head WHERE id = 1"

// lockHead locks the chain's head row (Syntax.HeadRow) and reads it into
// cs; the lock is held until the commit.
func (s *Store) lockHead(ctx context.Context, tx Querier, cs *Chain) error {
	if err := tx.QueryRow(ctx, headLock+s.x.ForUpdate).Scan(&cs.Pos, &cs.Hash); err != nil {
		return fmt.Errorf("lock the audit chain head: %w", err)
	}
	return nil
}

// headStmt moves the chain's head row to cs.
func (s *Store) headStmt(cs Chain) Stmt {
	return Stmt{"UPDATE audit_head SET pos = ?, hash = ? WHERE id = 1", []any{cs.Pos, cs.Hash}}
}

// eventStmt inserts e, already linked, as an event of opID.
func errAppend(err error) error { return fmt.Errorf("append events: %w", err) }

// AppendBulk appends events to an existing operation through the store's
// own append path (sealing, numbering, hashing), all in one transaction:
// the way to build a large store quickly, e.g. for a test of scale.
func (s *Store) AppendBulk(ctx context.Context, opID string, events []pollwarden.Event) error {
	evs, err := prepareEvents(s.sealer, opID, events)
	if err != nil {
		return s.fail(err, "append to %q", opID)
	}
	err = s.d.Write(ctx, func(tx Querier) error {
		var cs Chain
		if err := scanOpRow(ctx, tx, "SELECT "+seqCol+" FROM operations WHERE id = ?"+s.x.ForUpdate, opID, &cs.Seq); err != nil {
			return err
		}
		if !s.x.HeadRow {
			if err := tx.QueryRow(ctx, "SELECT "+headCols).Scan(&cs.Pos, &cs.Hash); err != nil {
				return err
			}
		}
		return s.appendEvents(ctx, tx, opID, cs, evs)
	})
	if err != nil {
		return s.fail(err, "append to %q", opID)
	}
	return nil
}

// checkSealMode makes sure this store's appends match the store's sealing:
// the first append records it (sealed with this key, or plain), every
// later one must agree, so a store never mixes plain and sealed payloads
// and a missing or wrong key writes nothing.
func (s *Store) checkSealMode(ctx context.Context, tx Querier) error {
	s.modeMu.Lock()
	mode, known := s.mode, s.modeKnown
	s.modeMu.Unlock()
	if !known {
		stored, found, err := readSealMode(ctx, tx)
		if err != nil {
			return err
		}
		if !found {
			// The first append decides. Not cached: the transaction may
			// still roll back.
			if _, err := tx.Exec(ctx, "INSERT INTO audit_settings (id, seal_key_id) VALUES (1, ?)", keyID(s.sealer)); err != nil {
				return fmt.Errorf("record audit sealing: %w", err)
			}
			return nil
		}
		mode = stored
		s.modeMu.Lock()
		s.mode, s.modeKnown = stored, true // fixed once written (triggers)
		s.modeMu.Unlock()
	}
	return sealMismatch(mode, keyID(s.sealer))
}

func readSealMode(ctx context.Context, q Querier) (keyID string, found bool, err error) {
	err = q.QueryRow(ctx, "SELECT seal_key_id FROM audit_settings WHERE id = 1").Scan(&keyID)
	if errors.Is(err, ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read audit sealing: %w", err)
	}
	return keyID, true, nil
}

// CheckSealing reports, without writing, whether this Store can append
// events: nil for a store with no events yet, or one sealed with the key
// given to Open (plain when none was given); else an ErrSealing error
// naming the store's key and the given one. Commands that write call it
// before doing anything else.
func (s *Store) CheckSealing(ctx context.Context) error {
	mode, found, err := readSealMode(ctx, s.d.Reader())
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if !found {
		return nil
	}
	if err := sealMismatch(mode, keyID(s.sealer)); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// SealKeyID returns the id of the key the store's payloads are sealed with:
// "" with sealed false for a plain store or one with no events yet.
func (s *Store) SealKeyID(ctx context.Context) (keyID string, sealed bool, err error) {
	mode, _, err := readSealMode(ctx, s.d.Reader())
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", s.name, err)
	}
	return mode, mode != "", nil
}
