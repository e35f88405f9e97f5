package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// The quota key rows (migration 008): one per key, its KeyState as JSON
// with its version beside it.
const (
	keyRead   = "SELECT version, state FROM quota_keys WHERE key = ?"
	keyList   = "SELECT version, state FROM quota_keys WHERE version > 0 ORDER BY key"
	keyUpsert = "INSERT INTO quota_keys (key, version, state, updated_at) VALUES (?, ?, ?, ?) " +
		"ON CONFLICT (key) DO UPDATE SET version = excluded.version, state = excluded.state, updated_at = excluded.updated_at"
)

// decodeKey reads a stored key row.
func decodeKey(version int64, state string) (*pollwarden.KeyState, error) {
	ks := pollwarden.NewKeyState("")
	if err := json.Unmarshal([]byte(state), ks); err != nil {
		return nil, fmt.Errorf("decode quota key row: %w", err)
	}
	ks.Version = version
	return ks, nil
}

// keyWrite is the statement that stores ks as the row after version
// read (0: none was stored); ks.Version is set to the new one.
func keyWrite(ks *pollwarden.KeyState, read int64) (Stmt, error) {
	if err := checkTime("quota key update", ks.UpdatedAt); err != nil {
		return Stmt{}, fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err)
	}
	ks.Version = read + 1
	b, err := json.Marshal(ks)
	if err != nil {
		return Stmt{}, err
	}
	return Stmt{keyUpsert, []any{ks.Key, ks.Version, string(b), FormatTime(ks.UpdatedAt)}}, nil
}

// KeyGet returns the row of key, or ErrNotFound.
func (s *Store) KeyGet(ctx context.Context, key string) (*pollwarden.KeyState, error) {
	var version int64
	var state string
	err := s.d.Reader().QueryRow(ctx, keyRead, key).Scan(&version, &state)
	if errors.Is(err, ErrNoRows) || err == nil && version == 0 {
		err = pollwarden.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(err, "get quota key %q", key)
	}
	ks, err := decodeKey(version, state)
	if err != nil {
		return nil, s.fail(err, "get quota key %q", key)
	}
	return ks, nil
}

// KeyList returns every key row, by key.
func (s *Store) KeyList(ctx context.Context) ([]pollwarden.KeyState, error) {
	rows, err := s.d.Reader().Query(ctx, keyList)
	if err != nil {
		return nil, s.fail(err, "list quota keys")
	}
	defer rows.Close()
	var out []pollwarden.KeyState
	for rows.Next() {
		var version int64
		var state string
		if err := rows.Scan(&version, &state); err != nil {
			return nil, s.fail(err, "list quota keys")
		}
		ks, err := decodeKey(version, state)
		if err != nil {
			return nil, s.fail(err, "list quota keys")
		}
		out = append(out, *ks)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err, "list quota keys")
	}
	return out, nil
}
