package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

// defaultScanLimit is EventScan's page size when the caller gives none.
const defaultScanLimit = 1000

const eventCols = "pos, operation_id, seq, at, kind, payload, prev_hash, hash"

// appendEvents locks the chain head, places evs after it (and after the
// operation's last seq, read under the operation's row lock), inserts them
// and moves the head, all in the caller's transaction. The head's row lock
// is held until the commit, so appends from every process sharing the
// database run one at a time and pos is gap-free.
func (s *Store) appendEvents(ctx context.Context, tx pgx.Tx, opID string, seq int64, evs []pollwarden.Event) error {
	if len(evs) == 0 {
		return nil
	}
	cs := storerow.Chain{Seq: seq}
	if err := tx.QueryRow(ctx, "SELECT pos, hash FROM audit_head WHERE id = 1 FOR UPDATE").Scan(&cs.Pos, &cs.Hash); err != nil {
		return fmt.Errorf("lock the audit chain head: %w", err)
	}
	// Under the head's lock: two first appends cannot both record a mode.
	if err := s.checkSealMode(ctx, tx); err != nil {
		return err
	}
	var b pgx.Batch
	for i := range evs {
		e := &evs[i]
		cs.Link(e)
		b.Queue("INSERT INTO events ("+eventCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
			e.Pos, opID, e.Seq, storerow.FormatTime(e.At), string(e.Kind), e.Payload, e.PrevHash, e.Hash)
	}
	b.Queue("UPDATE audit_head SET pos = $1, hash = $2 WHERE id = 1", cs.Pos, cs.Hash)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	return nil
}

// checkSealMode makes sure this store's appends match the store's sealing:
// the first append records it (sealed with this key, or plain), every
// later one must agree, so a store never mixes plain and sealed payloads
// and a missing or wrong key writes nothing.
func (s *Store) checkSealMode(ctx context.Context, tx pgx.Tx) error {
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
			if _, err := tx.Exec(ctx, "INSERT INTO audit_settings (id, seal_key_id) VALUES (1, $1)", storerow.KeyID(s.sealer)); err != nil {
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
	QueryRow(context.Context, string, ...any) pgx.Row
}) (keyID string, found bool, err error) {
	err = q.QueryRow(ctx, "SELECT seal_key_id FROM audit_settings WHERE id = 1").Scan(&keyID)
	if errNoRows(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read audit sealing: %w", err)
	}
	return keyID, true, nil
}

// CheckSealing reports, without writing, whether this Store can append
// events: nil for a store with no events yet, or one sealed with the key
// given to Open (plain when none was given); else an ErrSealing error.
func (s *Store) CheckSealing(ctx context.Context) error {
	mode, found, err := readSealMode(ctx, s.pool)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !found {
		return nil
	}
	if err := storerow.SealMismatch(mode, storerow.KeyID(s.sealer)); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// SealKeyID returns the id of the key the store's payloads are sealed with:
// "" with sealed false for a plain store or one with no events yet.
func (s *Store) SealKeyID(ctx context.Context) (keyID string, sealed bool, err error) {
	mode, _, err := readSealMode(ctx, s.pool)
	if err != nil {
		return "", false, fmt.Errorf("postgres: %w", err)
	}
	return mode, mode != "", nil
}

func scanEvent(rows pgx.Rows) (pollwarden.Event, error) {
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
	rows, err := s.pool.Query(ctx, "SELECT "+eventCols+" FROM events WHERE operation_id = $1 ORDER BY seq", operationID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list events of %q: %w", operationID, err)
	}
	defer rows.Close()
	var out []pollwarden.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list events of %q: %w", operationID, err)
		}
		if e.Data, err = audit.OpenPayload(s.sealer, e); err != nil {
			return nil, fmt.Errorf("postgres: list events of %q: %w", operationID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list events of %q: %w", operationID, err)
	}
	return out, nil
}

// EventScan returns a page of raw events in chain order (see
// pollwarden.Store): a range read of the primary key, or of the
// (operation_id, seq) index for one operation, in which seq order is pos
// order.
func (s *Store) EventScan(ctx context.Context, p pollwarden.EventScanParams) ([]pollwarden.Event, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultScanLimit
	}
	var rows pgx.Rows
	var err error
	if p.OperationID == "" {
		rows, err = s.pool.Query(ctx, "SELECT "+eventCols+" FROM events WHERE pos > $1 ORDER BY pos LIMIT $2", p.AfterPos, limit)
	} else {
		rows, err = s.pool.Query(ctx, "SELECT "+eventCols+" FROM events WHERE operation_id = $1 AND pos > $2 ORDER BY seq LIMIT $3",
			p.OperationID, p.AfterPos, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: scan events: %w", err)
	}
	defer rows.Close()
	out := make([]pollwarden.Event, 0, min(limit, defaultScanLimit))
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: scan events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: scan events: %w", err)
	}
	return out, nil
}

// AuditHead returns the last event's position and hash (0, "" when none),
// read from the committed chain head.
func (s *Store) AuditHead(ctx context.Context) (int64, string, error) {
	var pos int64
	var hash string
	if err := s.pool.QueryRow(ctx, "SELECT pos, hash FROM audit_head WHERE id = 1").Scan(&pos, &hash); err != nil {
		return 0, "", fmt.Errorf("postgres: audit head: %w", err)
	}
	return pos, hash, nil
}

// ErrSealing: the store's sealing and the key given to Open disagree, so
// events cannot be appended (see CheckSealing). It is the same value in
// every driver; such errors also wrap audit.ErrNoKey or audit.ErrWrongKey.
var ErrSealing = storerow.ErrSealing
