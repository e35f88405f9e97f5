package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// defaultScanLimit is EventScan's page size when the caller gives none.
const defaultScanLimit = 1000

func scanEvent(rows Rows) (pollwarden.Event, error) {
	var e pollwarden.Event
	var at, kind string
	if err := rows.Scan(&e.Pos, &e.OperationID, &e.Seq, &at, &kind, &e.Payload, &e.PrevHash, &e.Hash, &e.PayloadDigest); err != nil {
		return e, err
	}
	var err error
	if e.At, err = parseTime(at); err != nil {
		return e, fmt.Errorf("pos %d: %w", e.Pos, err)
	}
	e.Kind = pollwarden.EventKind(kind)
	return e, nil
}

// collectEvents reads every event of rows, opening payloads when open.
func (s *Store) collectEvents(rows Rows, open bool, capacity int) ([]pollwarden.Event, error) {
	defer rows.Close()
	out := make([]pollwarden.Event, 0, capacity)
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		if open {
			if e.Data, err = audit.OpenPayload(s.sealer, e); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// EventList returns the operation's events by seq, payloads decoded (and
// opened with the store's key when sealed); none (and no error) for an
// unknown operation.
func (s *Store) EventList(ctx context.Context, operationID string) ([]pollwarden.Event, error) {
	rows, err := s.d.Reader().Query(ctx, "SELECT "+eventCols+" FROM events WHERE operation_id = ? ORDER BY seq", operationID)
	if err != nil {
		return nil, s.fail(err, "list events of %q", operationID)
	}
	out, err := s.collectEvents(rows, true, 0)
	if err != nil {
		return nil, s.fail(err, "list events of %q", operationID)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// EventScan returns a page of raw events in chain order (see
// pollwarden.Store): a range read by pos, or an operation's page through
// its (operation_id, seq) index, in which seq order is pos order.
func (s *Store) EventScan(ctx context.Context, p pollwarden.EventScanParams) ([]pollwarden.Event, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultScanLimit
	}
	var rows Rows
	var err error
	if p.OperationID == "" {
		rows, err = s.d.Reader().Query(ctx, "SELECT "+eventCols+" FROM events WHERE pos > ? ORDER BY pos LIMIT ?", p.AfterPos, limit)
	} else {
		rows, err = s.d.Reader().Query(ctx, "SELECT "+eventCols+" FROM events WHERE operation_id = ? AND pos > ? ORDER BY seq LIMIT ?",
			p.OperationID, p.AfterPos, limit)
	}
	if err != nil {
		return nil, s.fail(err, "scan events")
	}
	out, err := s.collectEvents(rows, false, min(limit, defaultScanLimit))
	if err != nil {
		return nil, s.fail(err, "scan events")
	}
	return out, nil
}

// AuditHead returns the last event's position and hash (0, "" when none),
// from the head's own row where the dialect keeps one.
func (s *Store) AuditHead(ctx context.Context) (int64, string, error) {
	var pos int64
	var hash string
	q := "SELECT pos, hash FROM events ORDER BY pos DESC LIMIT 1"
	if s.x.HeadRow {
		q = "SELECT pos, hash FROM audit_head WHERE id = 1"
	}
	err := s.d.Reader().QueryRow(ctx, q).Scan(&pos, &hash)
	if errors.Is(err, ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", s.fail(err, "audit head")
	}
	return pos, hash, nil
}
