package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// pendingEvent is an event encoded for storage before the transaction, so a
// bad event fails the call without touching the store.
type pendingEvent struct {
	ev   pollwarden.Event
	data string
}

func prepareEvents(opID string, events []pollwarden.Event) ([]pendingEvent, error) {
	out := make([]pendingEvent, len(events))
	for i, e := range events {
		if e.OperationID == "" {
			e.OperationID = opID
		}
		if e.OperationID != opID {
			return nil, fmt.Errorf("%w: event %d names operation %q", pollwarden.ErrInvalid, i, e.OperationID)
		}
		if err := checkTime("event time", e.At); err != nil {
			return nil, fmt.Errorf("%w: event %d: %v", pollwarden.ErrInvalid, i, err)
		}
		data, err := json.Marshal(e.Data)
		if err != nil {
			return nil, fmt.Errorf("%w: event %d data: %v", pollwarden.ErrInvalid, i, err)
		}
		out[i] = pendingEvent{ev: e, data: string(data)}
	}
	return out, nil
}

// appendEvents numbers and chains evs after the operation's last stored
// event and inserts them. It runs inside the writing transaction, which
// holds the write lock, so no other writer can take the same seq.
func appendEvents(ctx context.Context, tx *sql.Tx, opID string, evs []pendingEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var seq int64
	var hash string
	err := tx.QueryRowContext(ctx,
		"SELECT seq, hash FROM events WHERE operation_id = ? ORDER BY seq DESC LIMIT 1", opID).Scan(&seq, &hash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read last event: %w", err)
	}
	for i := range evs {
		e := &evs[i].ev
		seq++
		e.Seq, e.PrevHash = seq, hash
		e.Hash = audit.Hash(hash, *e)
		hash = e.Hash
		_, err := tx.ExecContext(ctx,
			"INSERT INTO events (operation_id, seq, at, kind, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
			opID, e.Seq, formatTime(e.At), string(e.Kind), evs[i].data, e.PrevHash, e.Hash)
		if err != nil {
			return fmt.Errorf("append event %d: %w", seq, err)
		}
	}
	return nil
}

// publishEvents hands the stored numbering back to the caller's slice once
// the transaction has committed.
func publishEvents(dst []pollwarden.Event, evs []pendingEvent) {
	for i := range evs {
		dst[i].OperationID = evs[i].ev.OperationID
		dst[i].Seq = evs[i].ev.Seq
		dst[i].PrevHash = evs[i].ev.PrevHash
		dst[i].Hash = evs[i].ev.Hash
	}
}

// EventList returns the operation's events by seq; none (and no error) for
// an unknown operation.
func (s *Store) EventList(ctx context.Context, operationID string) ([]pollwarden.Event, error) {
	rows, err := s.db.QueryContext(ctx,
		"SELECT seq, at, kind, data, prev_hash, hash FROM events WHERE operation_id = ? ORDER BY seq", operationID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
	}
	defer rows.Close()
	var out []pollwarden.Event
	for rows.Next() {
		e := pollwarden.Event{OperationID: operationID}
		var at, kind, data string
		if err := rows.Scan(&e.Seq, &at, &kind, &data, &e.PrevHash, &e.Hash); err != nil {
			return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
		}
		if e.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("sqlite: list events of %q: seq %d: %w", operationID, e.Seq, err)
		}
		e.Kind = pollwarden.EventKind(kind)
		if err := json.Unmarshal([]byte(data), &e.Data); err != nil {
			return nil, fmt.Errorf("sqlite: list events of %q: seq %d data: %w", operationID, e.Seq, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list events of %q: %w", operationID, err)
	}
	return out, nil
}
