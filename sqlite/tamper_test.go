package sqlite_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

// These tests tamper with a real store file the way an attacker with write
// access would: with the bare driver, after dropping the append-only
// triggers. The store is closed meanwhile, so its WAL is checkpointed into
// the file first.

// fillStore writes n operations of 4 events each, interleaved, and closes
// the store: 4n events, positions 1..4n.
func fillStore(t *testing.T, path string, opts sqlite.Options, n int) {
	t.Helper()
	s := open(t, path, opts)
	defer s.Close()
	appendOps(t, s, 0, n)
}

func appendOps(t *testing.T, s *sqlite.Store, from, n int) {
	t.Helper()
	at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	ops := make([]*pollwarden.Operation, n)
	for i := range ops {
		ops[i] = &pollwarden.Operation{ID: fmt.Sprintf("op-%d", from+i), Phase: pollwarden.PhaseWaiting}
		if err := s.OperationCreate(t.Context(), ops[i], []pollwarden.Event{{At: at, Kind: pollwarden.EventSubmitted,
			Data: pollwarden.EventData{ProviderJobID: fmt.Sprint("job-", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for round := 1; round <= 3; round++ {
		for _, op := range ops {
			op.StatusRequestsUsed = round
			ev := []pollwarden.Event{{At: at.Add(time.Duration(round) * time.Second), Kind: pollwarden.EventResponseReceived,
				Data: pollwarden.EventData{HTTPStatus: 200, State: "running", RequestsUsed: round}}}
			if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at, Events: ev}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// attacker opens the file with the bare driver and drops the triggers that
// keep events append-only.
func attacker(t *testing.T, path string) *sql.DB {
	t.Helper()
	db := rawDB(t, path)
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{"DROP TRIGGER events_no_update", "DROP TRIGGER events_no_delete"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// verifyFile reopens the store (without any key) and walks its chain.
func verifyFile(t *testing.T, path string, v *audit.Verifier) error {
	t.Helper()
	s := open(t, path, sqlite.Options{})
	defer s.Close()
	return v.Walk(context.Background(), s, 7) // small pages: the walk crosses page ends
}

func wantBreak(t *testing.T, err error, pos int64, problem string) {
	t.Helper()
	var ce *audit.ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("verify = %v, want a chain error at pos %d (%s)", err, pos, problem)
	}
	if ce.Pos != pos || ce.Problem != problem || ce.OperationID == "" || ce.Seq == 0 {
		t.Fatalf("verify = %v, want pos %d %s naming the operation and seq", err, pos, problem)
	}
}

func head(t *testing.T, path string) (int64, string) {
	t.Helper()
	s := open(t, path, sqlite.Options{})
	defer s.Close()
	pos, hash, err := s.AuditHead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return pos, hash
}

func TestTamperDetected(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		mode := map[bool]string{false: "plain", true: "sealed"}[sealed]
		opts := sqlite.Options{}
		if sealed {
			opts.Sealer = storetest.SealKey(t, 1)
		}
		prepare := func(t *testing.T) (string, *sql.DB) {
			path := filepath.Join(t.TempDir(), "pw.db")
			fillStore(t, path, opts, 5) // 20 events
			return path, attacker(t, path)
		}
		t.Run(mode+"/intact", func(t *testing.T) {
			path, _ := prepare(t)
			var v audit.Verifier
			if err := verifyFile(t, path, &v); err != nil || v.Pos() != 20 || v.Operations() != 5 {
				t.Fatalf("intact store: %v (pos %d, %d operations)", err, v.Pos(), v.Operations())
			}
		})
		t.Run(mode+"/edit a payload byte", func(t *testing.T) {
			path, db := prepare(t)
			var p []byte
			if err := db.QueryRow("SELECT payload FROM events WHERE pos = 9").Scan(&p); err != nil {
				t.Fatal(err)
			}
			p[len(p)/2] ^= 0x01
			mustExec(t, db, "UPDATE events SET payload = ? WHERE pos = 9", p)
			wantBreak(t, verifyFile(t, path, &audit.Verifier{}), 9, audit.ProblemHash)
		})
		t.Run(mode+"/delete a middle event", func(t *testing.T) {
			path, db := prepare(t)
			mustExec(t, db, "DELETE FROM events WHERE pos = 9")
			wantBreak(t, verifyFile(t, path, &audit.Verifier{}), 10, audit.ProblemGap)
		})
		t.Run(mode+"/delete and renumber", func(t *testing.T) {
			path, db := prepare(t)
			mustExec(t, db, "DELETE FROM events WHERE pos = 9")
			mustExec(t, db, "UPDATE events SET pos = pos - 1 WHERE pos > 9") // ascending: each new pos is free
			wantBreak(t, verifyFile(t, path, &audit.Verifier{}), 9, audit.ProblemPrevHash)
		})
		t.Run(mode+"/insert an event", func(t *testing.T) {
			path, db := prepare(t)
			// Make room at pos 9, then forge a well-hashed event there
			// that points at pos 8, as a careful attacker would.
			mustExec(t, db, "UPDATE events SET pos = pos + 1000000 WHERE pos >= 9")
			mustExec(t, db, "UPDATE events SET pos = pos - 1000000 + 1 WHERE pos >= 1000000")
			var prev string
			if err := db.QueryRow("SELECT hash FROM events WHERE pos = 8").Scan(&prev); err != nil {
				t.Fatal(err)
			}
			forged := pollwarden.Event{Pos: 9, OperationID: "op-2", Seq: 99, At: time.Now().UTC(), Kind: pollwarden.EventDecision,
				PrevHash: prev, Payload: []byte(`{"decision":"approved"}`)}
			forged.PayloadDigest = audit.PayloadDigest(forged.Payload)
			forged.Hash = audit.Hash(forged)
			mustExec(t, db, "INSERT INTO events (pos, operation_id, seq, at, kind, payload, prev_hash, hash, payload_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
				forged.Pos, forged.OperationID, forged.Seq, forged.At.Format("2006-01-02T15:04:05.000000000Z07:00"), string(forged.Kind),
				forged.Payload, forged.PrevHash, forged.Hash, forged.PayloadDigest)
			wantBreak(t, verifyFile(t, path, &audit.Verifier{}), 10, audit.ProblemPrevHash)
		})
		t.Run(mode+"/swap two events", func(t *testing.T) {
			path, db := prepare(t)
			mustExec(t, db, "UPDATE events SET pos = 1000000 WHERE pos = 9")
			mustExec(t, db, "UPDATE events SET pos = 9 WHERE pos = 10")
			mustExec(t, db, "UPDATE events SET pos = 10 WHERE pos = 1000000")
			wantBreak(t, verifyFile(t, path, &audit.Verifier{}), 9, audit.ProblemPrevHash)
		})
		t.Run(mode+"/truncate the tail", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pw.db")
			fillStore(t, path, opts, 5)
			_, knownHead := head(t, path) // written down before the attack
			db := attacker(t, path)
			mustExec(t, db, "DELETE FROM events WHERE pos > 17")
			// Without the known head the rest of the chain is intact and
			// nothing can tell it was longer: verify passes but reports a
			// head that is not the one written down.
			var v audit.Verifier
			if err := verifyFile(t, path, &v); err != nil || v.Pos() != 17 || v.Hash() == knownHead {
				t.Fatalf("without --head: %v, head pos %d", err, v.Pos())
			}
			wantBreak(t, verifyFile(t, path, &audit.Verifier{Head: knownHead}), 17, audit.ProblemHead)
		})
		t.Run(mode+"/rewrite the whole chain", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pw.db")
			fillStore(t, path, opts, 5)
			anchor := signHead(t, path)
			db := attacker(t, path)
			// Edit pos 9 and recompute every hash from there: the chain
			// is consistent again, only an anchor (or head) exposes it.
			rechain(t, db, 9, func(e *pollwarden.Event) { e.Kind = pollwarden.EventDecision })
			if err := verifyFile(t, path, &audit.Verifier{}); err != nil {
				t.Fatalf("a fully rehashed chain is consistent: %v", err)
			}
			wantBreak(t, verifyFile(t, path, &audit.Verifier{Checkpoints: []audit.Checkpoint{anchor.Checkpoint()}}), 20, audit.ProblemAnchor)
		})
	}
}

// rechain applies edit to the event at pos and rewrites every hash from
// there on, as an attacker who knows the (public) encoding can.
func rechain(t *testing.T, db *sql.DB, pos int64, edit func(*pollwarden.Event)) {
	t.Helper()
	rows, err := db.Query("SELECT pos, operation_id, seq, at, kind, payload, prev_hash, payload_digest FROM events WHERE pos >= ? ORDER BY pos", pos-1)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pollwarden.Event
	for rows.Next() {
		var e pollwarden.Event
		var at, kind string
		if err := rows.Scan(&e.Pos, &e.OperationID, &e.Seq, &at, &kind, &e.Payload, &e.PrevHash, &e.PayloadDigest); err != nil {
			t.Fatal(err)
		}
		e.At, _ = time.Parse(time.RFC3339Nano, at)
		e.Kind = pollwarden.EventKind(kind)
		evs = append(evs, e)
	}
	rows.Close()
	prev := ""
	for i := range evs {
		e := &evs[i]
		if i == 0 {
			prev = audit.Hash(*e) // the untouched predecessor
			continue
		}
		if e.Pos == pos {
			edit(e)
		}
		e.PrevHash = prev
		e.Hash = audit.Hash(*e)
		prev = e.Hash
		mustExec(t, db, "UPDATE events SET kind = ?, prev_hash = ?, hash = ? WHERE pos = ?", string(e.Kind), e.PrevHash, e.Hash, e.Pos)
	}
}

var anchorKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// signHead verifies the store and signs its head, as `pollwarden audit
// anchor` does.
func signHead(t *testing.T, path string) audit.Anchor {
	t.Helper()
	var v audit.Verifier
	if err := verifyFile(t, path, &v); err != nil {
		t.Fatal(err)
	}
	return audit.SignAnchor(anchorKey, v.Pos(), v.Hash(), time.Now())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRollbackDetectedByAnchor keeps a copy of the store file, lets the
// store grow and anchors its head, then puts the old copy back: the chain
// of the old copy is intact, only the anchor shows the rollback.
func TestRollbackDetectedByAnchor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pw.db")
	fillStore(t, path, sqlite.Options{}, 3) // 12 events; closed, so the file is complete
	copyFile(t, path, filepath.Join(dir, "old.db"))

	s := open(t, path, sqlite.Options{})
	appendOps(t, s, 3, 2) // 8 more
	s.Close()
	anchor := signHead(t, path)
	if err := anchor.Check(anchorKey.Public().(ed25519.PublicKey)); err != nil || anchor.Pos != 20 {
		t.Fatalf("anchor %+v: %v", anchor, err)
	}
	cp := []audit.Checkpoint{anchor.Checkpoint()}
	if err := verifyFile(t, path, &audit.Verifier{Checkpoints: cp}); err != nil {
		t.Fatalf("current store against its anchor: %v", err)
	}

	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	copyFile(t, filepath.Join(dir, "old.db"), path)
	if err := verifyFile(t, path, &audit.Verifier{}); err != nil {
		t.Fatalf("the old copy's chain is intact: %v", err)
	}
	wantBreak(t, verifyFile(t, path, &audit.Verifier{Checkpoints: cp}), 12, audit.ProblemAnchor)

	// Later appends to the rolled-back copy reuse positions 13..20 with
	// other content: the anchor's hash at pos 20 no longer matches.
	s = open(t, path, sqlite.Options{})
	appendOps(t, s, 10, 2)
	s.Close()
	wantBreak(t, verifyFile(t, path, &audit.Verifier{Checkpoints: cp}), 20, audit.ProblemAnchor)
}
