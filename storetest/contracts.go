package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// testContractKept: the contract an operation is created under is kept in
// the create's transaction, under its fingerprint, byte for byte (its
// bytes are what the fingerprint hashes); a fingerprint kept once is never
// overwritten; a create that fails keeps nothing; a create without its
// contract is refused and stores nothing.
func testContractKept(t *testing.T, s pollwarden.Store) {
	ctx := t.Context()
	// Keys out of order and a nested reference: stored as given, not
	// re-encoded.
	a := &pollwarden.StoredContract{Fingerprint: "fp-a", Name: "c",
		Canonical: []byte(`{"Name":"c","Status":{"Credential":{"Ref":"env:TOKEN"}},"A":1}`)}
	if _, err := s.ContractGet(ctx, "fp-a"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("ContractGet before any create: %v, want ErrNotFound", err)
	}
	op := newOp("kept-1")
	op.ContractFingerprint = a.Fingerprint
	if err := s.OperationCreateUnder(ctx, op, nil, a); err != nil {
		t.Fatalf("OperationCreateUnder: %v", err)
	}
	got, err := s.ContractGet(ctx, "fp-a")
	if err != nil || got.Name != "c" || got.Fingerprint != "fp-a" || !bytes.Equal(got.Canonical, a.Canonical) {
		t.Fatalf("ContractGet = %+v (%s), %v; want the bytes as created", got, got.Canonical, err)
	}
	if rec := get(t, s, "kept-1"); rec.ContractFingerprint != "fp-a" {
		t.Fatalf("record's contract fingerprint %q", rec.ContractFingerprint)
	}

	// The same fingerprint again (another operation): kept as it was.
	other := &pollwarden.StoredContract{Fingerprint: "fp-a", Name: "c", Canonical: []byte(`{"Name":"c","B":2}`)}
	op2 := newOp("kept-2")
	op2.ContractFingerprint = "fp-a"
	if err := s.OperationCreateUnder(ctx, op2, nil, other); err != nil {
		t.Fatalf("second OperationCreateUnder: %v", err)
	}
	if err := s.ContractPut(ctx, other); err != nil {
		t.Fatalf("ContractPut of a kept fingerprint: %v", err)
	}
	if got, _ := s.ContractGet(ctx, "fp-a"); !bytes.Equal(got.Canonical, a.Canonical) {
		t.Fatalf("a kept contract was overwritten: %s", got.Canonical)
	}

	// A create that fails (the id is taken) keeps nothing of its contract.
	b := &pollwarden.StoredContract{Fingerprint: "fp-b", Name: "c", Canonical: []byte(`{"Name":"c"}`)}
	dup := newOp("kept-1")
	dup.ContractFingerprint = "fp-b"
	if err := s.OperationCreateUnder(ctx, dup, nil, b); !errors.Is(err, pollwarden.ErrExists) {
		t.Fatalf("create of a taken id: %v, want ErrExists", err)
	}
	if _, err := s.ContractGet(ctx, "fp-b"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("a failed create kept its contract: %v", err)
	}

	// A create without its contract is refused, and stores nothing.
	bare := newOp("kept-3")
	if err := s.OperationCreateUnder(ctx, bare, nil, nil); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("create under no contract: %v, want ErrInvalid", err)
	}
	if _, err := s.OperationGet(ctx, "kept-3"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("a refused create stored its operation: %v", err)
	}

	// ContractPut keeps a contract no operation names yet.
	if err := s.ContractPut(ctx, b); err != nil {
		t.Fatalf("ContractPut: %v", err)
	}
	if got, err := s.ContractGet(ctx, "fp-b"); err != nil || !bytes.Equal(got.Canonical, b.Canonical) {
		t.Fatalf("ContractGet after ContractPut: %+v, %v", got, err)
	}
}
