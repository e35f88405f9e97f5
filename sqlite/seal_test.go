package sqlite_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

func open(t *testing.T, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// Distinctive strings that only event payloads carry: the record holds
// neither (records are not sealed; see docs/audit.md).
const (
	secretState  = "zq-distinctive-state-7f3a"
	secretDetail = "zq-distinctive-note-41c9"
)

func writeSecrets(t *testing.T, s *sqlite.Store) {
	t.Helper()
	op := &pollwarden.Operation{ID: "op-1", Phase: pollwarden.PhaseWaiting, LastState: "running"}
	ev := []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventSubmitted, Data: pollwarden.EventData{Detail: secretDetail}}}
	if err := s.OperationCreate(t.Context(), op, ev); err != nil {
		t.Fatal(err)
	}
	ev = []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventStateChanged, Data: pollwarden.EventData{State: secretState, PrevState: "running"}}}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: time.Now(), Events: ev}); err != nil {
		t.Fatal(err)
	}
}

// fileBytes reads the store file and its WAL (either may be absent).
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func TestSealedStoreHoldsNoPlaintext(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "sealed"}[sealed]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pw.db")
			opts := sqlite.Options{}
			if sealed {
				opts.Sealer = storetest.SealKey(t, 1)
			}
			s := open(t, path, opts)
			writeSecrets(t, s)
			open := fileBytes(t, path) // events still in the WAL
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			closed := fileBytes(t, path) // checkpointed into the file
			for _, secret := range []string{secretState, secretDetail} {
				for when, b := range map[string][]byte{"while open": open, "after close": closed} {
					if found := bytes.Contains(b, []byte(secret)); found == sealed {
						t.Errorf("%s %s: %q found in the raw .db/-wal bytes: %v", name, when, secret, found)
					}
				}
			}
			// Events are readable again with the key, and verifiable without.
			s = reopen(t, path, opts)
			evs, err := s.EventList(t.Context(), "op-1")
			if err != nil || len(evs) != 2 || evs[1].Data.State != secretState || evs[0].Data.Detail != secretDetail {
				t.Fatalf("EventList = %+v, %v", evs, err)
			}
			var v audit.Verifier
			if err := v.Walk(t.Context(), reopen(t, path, sqlite.Options{}), 0); err != nil || v.Pos() != 2 {
				t.Fatalf("verify without the key: %v (pos %d)", err, v.Pos())
			}
		})
	}
}

func reopen(t *testing.T, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s := open(t, path, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSealingKeyMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pw.db")
	key, other := storetest.SealKey(t, 1), storetest.SealKey(t, 2)
	s := reopen(t, path, sqlite.Options{Sealer: key})
	if err := s.CheckSealing(t.Context()); err != nil {
		t.Fatalf("CheckSealing of a new store: %v", err)
	}
	writeSecrets(t, s)
	if id, sealed, err := s.SealKeyID(t.Context()); err != nil || !sealed || id != key.KeyID() {
		t.Fatalf("SealKeyID = %q %v %v", id, sealed, err)
	}
	headPos, headHash, _ := s.AuditHead(t.Context())

	for name, tc := range map[string]struct {
		sealer audit.Sealer
		want   error
	}{
		"no key":    {nil, audit.ErrNoKey},
		"wrong key": {other, audit.ErrWrongKey},
	} {
		t.Run(name, func(t *testing.T) {
			var opts sqlite.Options
			if tc.sealer != nil {
				opts.Sealer = tc.sealer
			}
			s := reopen(t, path, opts)
			if _, err := s.EventList(t.Context(), "op-1"); !errors.Is(err, tc.want) {
				t.Fatalf("EventList: %v, want %v", err, tc.want)
			}
			if err := s.CheckSealing(t.Context()); !errors.Is(err, sqlite.ErrSealing) || !errors.Is(err, tc.want) {
				t.Fatalf("CheckSealing: %v", err)
			}
			op, err := s.OperationGet(t.Context(), "op-1")
			if err != nil {
				t.Fatalf("records are not sealed and read without the key: %v", err)
			}
			v := op.Version
			err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: time.Now(),
				Events: []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventRequestSent}}})
			if !errors.Is(err, sqlite.ErrSealing) || !errors.Is(err, tc.want) {
				t.Fatalf("save with events: %v", err)
			}
			err = s.OperationCreate(t.Context(), &pollwarden.Operation{ID: "op-2", Phase: pollwarden.PhaseWaiting},
				[]pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventSubmitted}})
			if !errors.Is(err, sqlite.ErrSealing) {
				t.Fatalf("create with events: %v", err)
			}
			if got, _ := s.OperationGet(t.Context(), "op-1"); got.Version != v {
				t.Fatalf("a refused save changed the record: version %d, was %d", got.Version, v)
			}
			if _, err := s.OperationGet(t.Context(), "op-2"); !errors.Is(err, pollwarden.ErrNotFound) {
				t.Fatalf("a refused create stored the record: %v", err)
			}
			if pos, hash, _ := s.AuditHead(t.Context()); pos != headPos || hash != headHash {
				t.Fatalf("a refused append moved the head to %d", pos)
			}
			var ver audit.Verifier
			if err := ver.Walk(t.Context(), s, 0); err != nil {
				t.Fatalf("verify: %v", err)
			}
		})
	}

	t.Run("key on a plain store", func(t *testing.T) {
		plain := filepath.Join(t.TempDir(), "plain.db")
		p := reopen(t, plain, sqlite.Options{})
		writeSecrets(t, p)
		s := reopen(t, plain, sqlite.Options{Sealer: key})
		if evs, err := s.EventList(t.Context(), "op-1"); err != nil || len(evs) != 2 {
			t.Fatalf("plain events read with a key: %v", err)
		}
		if err := s.CheckSealing(t.Context()); !errors.Is(err, sqlite.ErrSealing) {
			t.Fatalf("CheckSealing: %v", err)
		}
		op, _ := s.OperationGet(t.Context(), "op-1")
		err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: time.Now(),
			Events: []pollwarden.Event{{At: time.Now(), Kind: pollwarden.EventRequestSent}}})
		if !errors.Is(err, sqlite.ErrSealing) {
			t.Fatalf("sealed append to a plain store: %v", err)
		}
	})
}
