package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

// defaultScanLimit is EventScan's page size when the caller gives none.
const defaultScanLimit = 1000

// headCols read the chain's head as two more columns of the query that a
// write already makes about its operation, saving a statement per write
// (statements, not the two index seeks, are what cost here).
const headCols = `coalesce((SELECT pos FROM events ORDER BY pos DESC LIMIT 1), 0),
	coalesce((SELECT hash FROM events ORDER BY pos DESC LIMIT 1), '')`

// seqCol reads the last seq of the operation whose row the query reads:
// one seek in the (operation_id, seq) index. (coalesce(max(seq), 0) would
// defeat SQLite's min/max optimisation and read every entry of the
// operation.)
const seqCol = `coalesce((SELECT seq FROM events WHERE operation_id = operations.id ORDER BY seq DESC LIMIT 1), 0)`

// appendEvents places evs after cs, read in the same transaction, and
// inserts them. The transaction holds SQLite's write lock (BEGIN
// IMMEDIATE): no other writer, in this process or another, can take the
// same pos or seq, so the chain needs no lock of its own.
func (s *Store) appendEvents(ctx context.Context, tx *sql.Tx, opID string, cs storerow.Chain, evs []pollwarden.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if err := s.checkSealMode(ctx, tx); err != nil {
		return err
	}
	insert := tx.StmtContext(ctx, s.insertStmt)
	for i := range evs {
		e := &evs[i]
		cs.Link(e)
		if _, err := insert.ExecContext(ctx, e.Pos, opID, e.Seq, storerow.FormatTime(e.At), string(e.Kind), e.Payload, e.PrevHash, e.Hash); err != nil {
			return fmt.Errorf("append event %d: %w", e.Seq, err)
		}
	}
	return nil
}

// The statements of a write with events are prepared once per Store
// (database/sql then keeps a prepared copy per pooled connection): parsing
// them costs more than running them.
const (
	insertEventSQL = "INSERT INTO events (" + eventCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
	// createChainSQL: does the operation exist, and the chain's head.
	createChainSQL = "SELECT EXISTS (SELECT 1 FROM operations WHERE id = ?), " + headCols
	// saveChainSQL: what a save checks, and where its events go.
	saveChainSQL = "SELECT version, lease_owner, lease_epoch, lease_expires_at, " + headCols + ", " + seqCol +
		" FROM operations WHERE id = ?"
)

func (s *Store) prepareStatements(ctx context.Context) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{{&s.insertStmt, insertEventSQL}, {&s.createChainStmt, createChainSQL}, {&s.saveChainStmt, saveChainSQL}} {
		st, err := s.db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*p.dst = st
	}
	return nil
}

func (s *Store) closeStatements() {
	for _, st := range []*sql.Stmt{s.insertStmt, s.createChainStmt, s.saveChainStmt} {
		if st != nil {
			st.Close()
		}
	}
}

// checkSealMode makes sure this store's appends match the store's sealing:
// the first append records it (sealed with this key, or plain), every
// later one must agree, so a store never mixes plain and sealed payloads
// and a missing or wrong key writes nothing.
func (s *Store) checkSealMode(ctx context.Context, tx *sql.Tx) error {
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
			_, err := tx.ExecContext(ctx, "INSERT INTO audit_settings (id, seal_key_id) VALUES (1, ?)", storerow.KeyID(s.sealer))
			if err != nil {
				return fmt.Errorf("record audit sealing: %w", err)
			}
			return nil
		}
		mode = stored
		s.modeMu.Lock()
		s.mode, s.modeKnown = stored, true // fixed once written (triggers)
		s.modeMu.Unlock()
	}
	return storerow.SealMismatch(mode, storerow.KeyID(s.sealer))
}

func readSealMode(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (keyID string, found bool, err error) {
	err = q.QueryRowContext(ctx, "SELECT seal_key_id FROM audit_settings WHERE id = 1").Scan(&keyID)
	if errors.Is(err, sql.ErrNoRows) {
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
	mode, found, err := readSealMode(ctx, s.db)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if !found {
		return nil
	}
	if err := storerow.SealMismatch(mode, storerow.KeyID(s.sealer)); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// SealKeyID returns the id of the key the store's payloads are sealed with:
// "" with sealed false for a plain store or one with no events yet.
func (s *Store) SealKeyID(ctx context.Context) (keyID string, sealed bool, err error) {
	mode, _, err := readSealMode(ctx, s.db)
	if err != nil {
		return "", false, fmt.Errorf("sqlite: %w", err)
	}
	return mode, mode != "", nil
}

const eventCols = "pos, operation_id, seq, at, kind, payload, prev_hash, hash"

func scanEvent(rows *sql.Rows) (pollwarden.Event, error) {
	var e pollwarden.Event
	var at, kind string
	if err := rows.Scan(&e.Pos, &e.OperationID, &e.Seq, &at, &kind, &e.Payload, &e.PrevHash, &e.Hash); err != nil {
		return e, err
	}
	var err error
	if e.At, err = storerow.ParseTime(at); err != nil {
		return e, fmt.Errorf("pos %d: %w", e.Pos, err)
	}
	e.Kind = pollwarden.EventKind(kind)
	return e, nil
}

// EventList returns the operation's events by seq, payloads decoded (and
// opened with the store's key when sealed); none (and no error) for an
// unknown operation.
func (s *Store) EventList(ctx context.Context, operationID string) ([]pollwarden.Event, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+eventCols+" FROM events WHERE operation_id = ? ORDER BY seq", operationID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
	}
	defer rows.Close()
	var out []pollwarden.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
		}
		if e.Data, err = audit.OpenPayload(s.sealer, e); err != nil {
			return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
	}
	return out, nil
}

// EventScan returns a page of raw events in chain order (see
// pollwarden.Store). Positions are the table's rowid, so each page is a
// range read of the table; an operation's page reads its (operation_id,
// seq) index, in which seq order is pos order.
func (s *Store) EventScan(ctx context.Context, p pollwarden.EventScanParams) ([]pollwarden.Event, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultScanLimit
	}
	var rows *sql.Rows
	var err error
	if p.OperationID == "" {
		rows, err = s.db.QueryContext(ctx, "SELECT "+eventCols+" FROM events WHERE pos > ? ORDER BY pos LIMIT ?", p.AfterPos, limit)
	} else {
		rows, err = s.db.QueryContext(ctx, "SELECT "+eventCols+" FROM events WHERE operation_id = ? AND pos > ? ORDER BY seq LIMIT ?",
			p.OperationID, p.AfterPos, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: scan events: %w", err)
	}
	defer rows.Close()
	out := make([]pollwarden.Event, 0, min(limit, defaultScanLimit))
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: scan events: %w", err)
	}
	return out, nil
}

// AuditHead returns the last event's position and hash (0, "" when none).
func (s *Store) AuditHead(ctx context.Context) (int64, string, error) {
	var pos int64
	var hash string
	err := s.db.QueryRowContext(ctx, "SELECT pos, hash FROM events ORDER BY pos DESC LIMIT 1").Scan(&pos, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("sqlite: audit head: %w", err)
	}
	return pos, hash, nil
}

// ErrSealing: the store's sealing and the key given to Open disagree, so
// events cannot be appended (see CheckSealing). It is the same value in
// every driver; such errors also wrap audit.ErrNoKey or audit.ErrWrongKey.
var ErrSealing = storerow.ErrSealing
