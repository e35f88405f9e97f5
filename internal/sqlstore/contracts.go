package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// contractInsert keeps a contract once: its key is the hash of its bytes,
// so a row already there holds the same contract.
const contractInsert = "INSERT INTO contracts (fingerprint, name, canonical) VALUES (?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING"

// checkContract refuses a contract that could not be read back.
func checkContract(c *pollwarden.StoredContract) error {
	if c == nil || c.Fingerprint == "" || c.Name == "" || len(c.Canonical) == 0 {
		return fmt.Errorf("%w: a stored contract needs a fingerprint, a name and its canonical form", pollwarden.ErrInvalid)
	}
	return nil
}

// putContract keeps c inside tx.
func putContract(ctx context.Context, tx Querier, c *pollwarden.StoredContract) error {
	_, err := tx.Exec(ctx, contractInsert, c.Fingerprint, c.Name, string(c.Canonical))
	return err
}

// OperationCreateUnder is OperationCreate that keeps c in the same
// transaction, so an operation is never stored without its contract.
func (s *Store) OperationCreateUnder(ctx context.Context, op *pollwarden.Operation, events []pollwarden.Event, c *pollwarden.StoredContract) error {
	if err := checkContract(c); err != nil {
		return s.fail(err, "create operation")
	}
	return s.create(ctx, op, events, c)
}

// ContractPut keeps c unless its fingerprint is already kept (an operation
// that takes up an edit lowering its limits moves to that contract).
func (s *Store) ContractPut(ctx context.Context, c *pollwarden.StoredContract) error {
	if err := checkContract(c); err != nil {
		return s.fail(err, "keep contract")
	}
	if err := s.d.Write(ctx, func(tx Querier) error { return putContract(ctx, tx, c) }); err != nil {
		return s.fail(err, "keep contract %s", c.Fingerprint)
	}
	return nil
}

// ContractGet returns the contract kept under fingerprint, or ErrNotFound.
func (s *Store) ContractGet(ctx context.Context, fingerprint string) (*pollwarden.StoredContract, error) {
	c := &pollwarden.StoredContract{Fingerprint: fingerprint}
	var canonical string
	err := s.d.Reader().QueryRow(ctx, "SELECT name, canonical FROM contracts WHERE fingerprint = ?", fingerprint).Scan(&c.Name, &canonical)
	if errors.Is(err, ErrNoRows) {
		err = pollwarden.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(err, "get contract %s", fingerprint)
	}
	c.Canonical = []byte(canonical)
	return c, nil
}
