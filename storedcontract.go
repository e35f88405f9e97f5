package pollwarden

import "context"

// OptionUseCurrentContract moves an operation onto the contract of its
// name as loaded now, when that differs from the one it runs under. It
// grants authority (the new contract may widen what is accepted or where
// requests go), so only an approver may choose it.
const OptionUseCurrentContract = "use_current_contract"

// StoredContract is a contract as the store keeps it: the merged contract
// (its extends resolved) in canonical JSON, under the fingerprint of those
// bytes. It holds secret references (env:, file:) only, never a secret.
type StoredContract struct {
	Fingerprint string
	Name        string
	Canonical   []byte
}

// ContractKeeper is the part of a Store that keeps the contracts
// operations run under, so that any process can act on an operation
// without the file it was created with.
type ContractKeeper interface {
	// OperationCreateUnder is OperationCreate that also keeps c, in the
	// same transaction; a fingerprint already kept is left as it is.
	OperationCreateUnder(ctx context.Context, op *Operation, events []Event, c *StoredContract) error
	// ContractPut keeps c unless its fingerprint is already kept.
	ContractPut(ctx context.Context, c *StoredContract) error
	// ContractGet returns the contract kept under fingerprint, or
	// ErrNotFound.
	ContractGet(ctx context.Context, fingerprint string) (*StoredContract, error)
}
