package contract_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/policy"
)

// TestStoredRoundTrip: every built-in contract and the full test
// contract come back from their stored form as the same contract (the
// same section digests, the same fingerprint when stored again), so an
// operation runs under exactly what it was created under.
func TestStoredRoundTrip(t *testing.T) {
	var exs []*contract.Loaded
	for _, name := range builtin.Names() {
		ex, err := contract.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		exs = append(exs, ex)
	}
	full, err := contract.Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fx, err := contract.Compile(full)
	if err != nil {
		t.Fatal(err)
	}
	exs = append(exs, fx)
	for _, ex := range exs {
		sc := contract.Stored(ex.Spec())
		back, err := contract.FromStored(sc)
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		if !maps.Equal(policy.ContractDigest(back.Spec()), policy.ContractDigest(ex.Spec())) {
			t.Errorf("%s: the stored contract's digests differ from the loaded one's", sc.Name)
		}
		if again := contract.Stored(back.Spec()); again.Fingerprint != sc.Fingerprint || !bytes.Equal(again.Canonical, sc.Canonical) {
			t.Errorf("%s: stored again, another fingerprint", sc.Name)
		}
	}
}

// TestStoredHoldsNoSecret: a contract whose credential's secret is set in
// the environment (and whose CA is a file) is stored with the references
// alone; the secret is nowhere in the stored bytes.
func TestStoredHoldsNoSecret(t *testing.T) {
	const secret = "sk-canary-stored-contract-4f9a2c"
	t.Setenv("STORED_CANARY_TOKEN", secret)
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(`version: 1
name: canary
status:
  url: "https://api.example.com/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:STORED_CANARY_TOKEN"}
state: {path: state, pending: [running], success: [done], failure: [failed]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := contract.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := contract.Stored(c)
	if bytes.Contains(sc.Canonical, []byte(secret)) {
		t.Fatal("the stored contract holds the secret")
	}
	if !bytes.Contains(sc.Canonical, []byte("env:STORED_CANARY_TOKEN")) {
		t.Fatalf("the stored contract lost its credential reference: %s", sc.Canonical)
	}
}

// TestFromStoredRefusesChangedBytes: a stored contract whose bytes are
// not its fingerprint's (a row changed behind pollwarden's back) is never
// compiled, so nothing is sent under it.
func TestFromStoredRefusesChangedBytes(t *testing.T) {
	ex, err := contract.Builtin(builtin.Names()[0])
	if err != nil {
		t.Fatal(err)
	}
	sc := contract.Stored(ex.Spec())
	sc.Canonical = bytes.Replace(sc.Canonical, []byte(`"Name":"`), []byte(`"Name":"x`), 1)
	if _, err := contract.FromStored(sc); !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("changed bytes: %v, want ErrInvalid", err)
	}
}

// keeper is a store's contract table in memory, counting reads.
type keeper struct {
	pollwarden.ContractKeeper
	kept  map[string]*pollwarden.StoredContract
	reads int
}

func (k *keeper) ContractGet(_ context.Context, fp string) (*pollwarden.StoredContract, error) {
	k.reads++
	if sc, ok := k.kept[fp]; ok {
		return sc, nil
	}
	return nil, pollwarden.ErrNotFound
}

// TestKeptCompilesOncePerFingerprint: the contract of an operation is
// read from the store and compiled once per process; a record with no
// fingerprint (created before contracts were kept) has none, and one
// naming a contract its store lacks is an error, never another contract.
func TestKeptCompilesOncePerFingerprint(t *testing.T) {
	ex, err := contract.Builtin(builtin.Names()[0])
	if err != nil {
		t.Fatal(err)
	}
	sc := contract.Stored(ex.Spec())
	k := &keeper{kept: map[string]*pollwarden.StoredContract{sc.Fingerprint: sc}}
	kept := contract.NewKept(k)
	op := &pollwarden.Operation{ID: "op", Contract: sc.Name, ContractFingerprint: sc.Fingerprint}
	first, ok, err := kept.Of(t.Context(), op)
	if err != nil || !ok {
		t.Fatalf("Of: %v, %v", ok, err)
	}
	second, _, _ := kept.Of(t.Context(), op)
	if first != second || k.reads != 1 {
		t.Fatalf("read %d times, same compiled contract %v; want one read", k.reads, first == second)
	}
	if _, ok, err := kept.Of(t.Context(), &pollwarden.Operation{ID: "old", Contract: sc.Name}); ok || err != nil {
		t.Fatalf("a record without a fingerprint: %v, %v; want none, no error", ok, err)
	}
	if _, ok, err := kept.Of(t.Context(), &pollwarden.Operation{ID: "lost", Contract: sc.Name, ContractFingerprint: "ab"}); ok || !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("a fingerprint the store lacks: %v, %v; want ErrInvalid", ok, err)
	}
}
