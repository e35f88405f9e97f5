package contract

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pollwarden/pollwarden"
)

// Stored is c as the store keeps it: the merged contract (its extends
// already resolved by Parse) as canonical JSON, under the SHA-256 of those
// bytes. A contract holds secret references (env:, file:) only, so the
// stored form holds no secret either.
func Stored(c *pollwarden.ContractSpec) *pollwarden.StoredContract {
	b, err := json.Marshal(c)
	if err != nil {
		// A contract is plain data; one that does not encode is a
		// programming error, caught by every test that creates an
		// operation.
		panic(fmt.Sprintf("contract: encoding contract %s: %v", c.Name, err))
	}
	sum := sha256.Sum256(b)
	return &pollwarden.StoredContract{Fingerprint: hex.EncodeToString(sum[:]), Name: c.Name, Canonical: b}
}

// FromStored compiles a stored contract. It refuses bytes that are not the
// fingerprint's, so a changed row is never run.
func FromStored(sc *pollwarden.StoredContract) (*Loaded, error) {
	sum := sha256.Sum256(sc.Canonical)
	if hex.EncodeToString(sum[:]) != sc.Fingerprint {
		return nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "stored contract %s does not match its fingerprint %s", sc.Name, sc.Fingerprint)
	}
	var c pollwarden.ContractSpec
	if err := json.Unmarshal(sc.Canonical, &c); err != nil {
		return nil, fmt.Errorf("stored contract %s (%s): %w", sc.Name, sc.Fingerprint, err)
	}
	return Compile(&c)
}

// Kept finds the contract an operation runs under in the store, compiled
// once per fingerprint for the life of the process: every door and the
// scheduler of one process share one Kept. It is safe for concurrent use.
type Kept struct {
	store pollwarden.ContractKeeper
	mu    sync.Mutex
	byFP  map[string]*Loaded
	// stored caches Stored by *Loaded: encoding and hashing a
	// contract costs more than the rest of a create's checks.
	stored sync.Map
}

// Stored is contract.Stored(ex.Spec()), computed once per loaded
// contract, which it also remembers under its fingerprint.
func (k *Kept) Stored(ex *Loaded) *pollwarden.StoredContract {
	if sc, ok := k.stored.Load(ex); ok {
		return sc.(*pollwarden.StoredContract)
	}
	sc := Stored(ex.Spec())
	k.mu.Lock()
	if _, ok := k.byFP[sc.Fingerprint]; !ok {
		k.byFP[sc.Fingerprint] = ex
	}
	k.mu.Unlock()
	got, _ := k.stored.LoadOrStore(ex, sc)
	return got.(*pollwarden.StoredContract)
}

// NewKept reads the contracts from st.
func NewKept(st pollwarden.ContractKeeper) *Kept {
	return &Kept{store: st, byFP: map[string]*Loaded{}}
}

// Of returns the contract op runs under. ok is false, with no error, for
// an operation created before contracts were kept (no fingerprint on its
// record): its caller then falls back to the loaded contract of its name.
func (k *Kept) Of(ctx context.Context, op *pollwarden.Operation) (ex *Loaded, ok bool, err error) {
	fp := op.ContractFingerprint
	if fp == "" {
		return nil, false, nil
	}
	k.mu.Lock()
	ex, ok = k.byFP[fp]
	k.mu.Unlock()
	if ok {
		return ex, true, nil
	}
	sc, err := k.store.ContractGet(ctx, fp)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, false, pollwarden.Refuse(pollwarden.ErrInvalid, "", "operation %s runs under contract %s (%s), which its store does not hold", op.ID, op.Contract, fp)
	}
	if err != nil {
		return nil, false, err
	}
	if ex, err = FromStored(sc); err != nil {
		return nil, false, err
	}
	k.mu.Lock()
	if had, dup := k.byFP[fp]; dup {
		ex = had
	} else {
		k.byFP[fp] = ex
	}
	k.mu.Unlock()
	return ex, true, nil
}
