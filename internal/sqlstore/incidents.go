package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The incident rows (migration 009): the columns people sort and filter
// on, and the whole record as JSON.
const (
	incidentCols   = "record, closed_at IS NULL"
	incidentSelect = "SELECT " + incidentCols + " FROM incidents"
	incidentOrder  = " ORDER BY (closed_at IS NULL) DESC, opened_at DESC, id LIMIT ?"
	incidentInsert = "INSERT INTO incidents (id, key, kind, opened_at, closed_at, what, since, last_probe, record) " +
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
	incidentUpdate = "UPDATE incidents SET closed_at = ?, last_probe = ?, record = ? WHERE id = ?"
	// maxIncidentList caps a list without a limit: a page, never "all".
	maxIncidentList = 500
)

// scanIncident reads one row of incidentCols.
func scanIncident(scan func(dest ...any) error) (*pollwarden.Incident, error) {
	var rec string
	var open any
	if err := scan(&rec, &open); err != nil {
		return nil, err
	}
	var inc pollwarden.Incident
	if err := json.Unmarshal([]byte(rec), &inc); err != nil {
		return nil, fmt.Errorf("decode incident: %w", err)
	}
	return &inc, nil
}

// IncidentList returns incidents, the open ones first, then newest first.
func (s *Store) IncidentList(ctx context.Context, p pollwarden.IncidentListParams) ([]*pollwarden.Incident, error) {
	q := incidentSelect
	if p.OpenOnly {
		q += " WHERE closed_at IS NULL"
	}
	limit := p.Limit
	if limit <= 0 || limit > maxIncidentList {
		limit = maxIncidentList
	}
	rows, err := s.d.Reader().Query(ctx, q+incidentOrder, limit)
	if err != nil {
		return nil, s.fail(err, "list incidents")
	}
	defer rows.Close()
	var out []*pollwarden.Incident
	for rows.Next() {
		inc, err := scanIncident(rows.Scan)
		if err != nil {
			return nil, s.fail(err, "list incidents")
		}
		out = append(out, inc)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err, "list incidents")
	}
	return out, nil
}

// IncidentGet returns one incident, or ErrNotFound.
func (s *Store) IncidentGet(ctx context.Context, id string) (*pollwarden.Incident, error) {
	inc, err := s.incidentRead(ctx, s.d.Reader(), id, "")
	if err != nil {
		return nil, s.fail(err, "get incident %q", id)
	}
	return inc, nil
}

func (s *Store) incidentRead(ctx context.Context, q Querier, id, lock string) (*pollwarden.Incident, error) {
	inc, err := scanIncident(q.QueryRow(ctx, incidentSelect+" WHERE id = ?"+lock, id).Scan)
	if errors.Is(err, ErrNoRows) {
		return nil, pollwarden.ErrNotFound
	}
	return inc, err
}

// incidentPut writes inc's row as it now stands.
func incidentPut(ctx context.Context, tx Querier, inc *pollwarden.Incident) error {
	b, err := json.Marshal(inc)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, incidentUpdate, formatTimePtr(inc.ClosedAt), inc.LastProbe, string(b), inc.ID)
	return err
}

// writeIncidents writes what an answer did to its key's incidents
// (policy.NoteIncident), in the transaction of the save that observed it.
// A close or a probe of an incident no longer stored open changes nothing.
func (s *Store) writeIncidents(ctx context.Context, tx Querier, fx pollwarden.IncidentEffects) error {
	if c := fx.Closed; c != nil {
		inc, err := s.incidentRead(ctx, tx, c.ID, s.x.ForUpdate)
		switch {
		case errors.Is(err, pollwarden.ErrNotFound):
		case err != nil:
			return fmt.Errorf("close incident %s: %w", c.ID, err)
		case inc.Open():
			inc.ClosedAt, inc.ClosedBy = c.ClosedAt, c.ClosedBy
			inc.Probes = max(inc.Probes, c.Probes)
			if c.LastProbe != "" {
				inc.LastProbe, inc.LastProbeAt = c.LastProbe, c.LastProbeAt
			}
			if err := incidentPut(ctx, tx, inc); err != nil {
				return fmt.Errorf("close incident %s: %w", c.ID, err)
			}
		}
	}
	if o := fx.Opened; o != nil {
		if err := checkTime("incident opening", o.OpenedAt); err != nil {
			return fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err)
		}
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, incidentInsert, o.ID, o.Key, string(o.Kind), FormatTime(o.OpenedAt), nil,
			o.What, FormatTime(o.Since), o.LastProbe, string(b))
		if err != nil {
			return fmt.Errorf("open incident %s: %w", o.ID, err)
		}
	}
	if p := fx.Probed; p != nil {
		inc, err := s.incidentRead(ctx, tx, p.ID, s.x.ForUpdate)
		switch {
		case errors.Is(err, pollwarden.ErrNotFound):
		case err != nil:
			return fmt.Errorf("probe of incident %s: %w", p.ID, err)
		case inc.Open():
			at := p.At
			inc.Probes++
			inc.LastProbe, inc.LastProbeAt = p.Answer, &at
			if err := incidentPut(ctx, tx, inc); err != nil {
				return fmt.Errorf("probe of incident %s: %w", p.ID, err)
			}
		}
	}
	return nil
}

// IncidentDecide closes the open incident p.ID with an approver's
// decision, clears it from its key's row and appends p.Events to
// operation p.OperationID, in one transaction. Rows are locked in the
// order every save takes them (operation, key, incident), so a decision
// and a save under the same key cannot deadlock.
func (s *Store) IncidentDecide(ctx context.Context, p pollwarden.IncidentDecideParams) (*pollwarden.Incident, error) {
	var evs []pollwarden.Event
	if p.OperationID != "" && len(p.Events) > 0 {
		var err error
		if evs, err = prepareEvents(s.sealer, p.OperationID, p.Events); err != nil {
			return nil, s.fail(err, "decide incident %q", p.ID)
		}
	}
	if err := checkTime("incident decision", p.Now); err != nil {
		return nil, s.fail(fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err), "decide incident %q", p.ID)
	}
	var out *pollwarden.Incident
	err := s.d.Write(ctx, func(tx Querier) error {
		var cs Chain
		if len(evs) > 0 {
			if err := scanOpRow(ctx, tx, "SELECT "+seqCol+" FROM operations WHERE id = ?"+s.x.ForUpdate, p.OperationID, &cs.Seq); err != nil {
				return err
			}
		}
		inc, err := s.incidentRead(ctx, tx, p.ID, "")
		if err != nil {
			return err
		}
		if err := s.clearKeyIncident(ctx, tx, inc.Key, p.ID, p.Now); err != nil {
			return err
		}
		if inc, err = s.incidentRead(ctx, tx, p.ID, s.x.ForUpdate); err != nil {
			return err
		}
		if !inc.Open() {
			return fmt.Errorf("%w: incident %s was closed at %s (%s)", pollwarden.ErrConflict, inc.ID,
				inc.ClosedAt.UTC().Format("2006-01-02 15:04:05 UTC"), inc.ClosedBy)
		}
		at, d := p.Now, p.Decision
		inc.ClosedAt, inc.ClosedBy, inc.Decision = &at, p.ClosedBy, &d
		if err := incidentPut(ctx, tx, inc); err != nil {
			return err
		}
		if len(evs) > 0 {
			if !s.x.HeadRow {
				if err := tx.QueryRow(ctx, "SELECT "+headCols).Scan(&cs.Pos, &cs.Hash); err != nil {
					return err
				}
			}
			if err := s.appendEvents(ctx, tx, p.OperationID, cs, evs); err != nil {
				return err
			}
		}
		out = inc
		return nil
	})
	if err != nil {
		return nil, s.fail(err, "decide incident %q", p.ID)
	}
	publishEvents(p.Events, evs)
	return out, nil
}

// clearKeyIncident removes incident id from key's row, if it is the
// row's open incident, so the key's operations are granted again.
func (s *Store) clearKeyIncident(ctx context.Context, tx Querier, key, id string, now time.Time) error {
	var version int64
	var state string
	err := tx.QueryRow(ctx, keyRead+s.x.ForUpdate, key).Scan(&version, &state)
	if errors.Is(err, ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	ks, err := decodeKey(version, state)
	if err != nil {
		return err
	}
	if ks.Incident.Open == nil || ks.Incident.Open.ID != id {
		return nil
	}
	ks.Incident.Open = nil
	ks.UpdatedAt = now
	st, err := keyWrite(ks, version)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, st.SQL, st.Args...)
	return err
}

// noteIncidents writes what a save's answer did to its key's incidents
// (the Effects policy.KeyNote left on the key's row) in the save's
// transaction, and returns their audit events, prepared, to append with
// the save's own; withEvents is false when the save appends none (its
// read took no chain head), and then only the rows are written.
func (s *Store) noteIncidents(ctx context.Context, tx Querier, keys *keyTx, key string, op *pollwarden.Operation, at time.Time, withEvents bool) ([]pollwarden.Event, error) {
	ks, err := keys.get(key)
	if err != nil || ks.Incident.Effects == nil {
		return nil, err
	}
	fx := *ks.Incident.Effects
	ks.Incident.Effects = nil
	if err := s.writeIncidents(ctx, tx, fx); err != nil {
		return nil, err
	}
	if !withEvents {
		return nil, nil
	}
	return prepareEvents(s.sealer, op.ID, pollwarden.IncidentEvents(op, fx, at))
}

// HeldCountSQL counts one incident's held operations, stopping at a
// limit: a seek in the partial index operations_held_by (the literal
// condition lets SQLite use it), never more than limit entries read.
// Exported so that a driver can check the plan its database makes of it.
const HeldCountSQL = "SELECT count(*) FROM (SELECT 1 FROM operations WHERE held_by <> '' AND held_by = ? LIMIT ?) AS held"

// IncidentHeld counts the operations each incident of ids holds now, each
// count at most limit.
func (s *Store) IncidentHeld(ctx context.Context, ids []string, limit int) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	for _, id := range ids {
		if _, ok := out[id]; ok || id == "" {
			continue
		}
		var n int64
		if err := s.d.Reader().QueryRow(ctx, HeldCountSQL, id, limit).Scan(&n); err != nil {
			return nil, s.fail(err, "count held operations")
		}
		out[id] = int(n)
	}
	return out, nil
}
