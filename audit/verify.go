package audit

import (
	"context"
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// Problems a ChainError reports.
const (
	ProblemGap      = "pos gap"             // positions are missing: events were deleted
	ProblemOrder    = "pos out of order"    // a position repeats or goes back
	ProblemPrevHash = "prev_hash mismatch"  // the event does not point at its predecessor
	ProblemHash     = "hash mismatch"       // the event's content does not match its hash
	ProblemSeq      = "seq gap"             // an operation's seq is missing, repeated or out of order
	ProblemHead     = "head not found"      // the known head is not in the store: the tail was cut
	ProblemAnchor   = "anchor mismatch"     // the store disagrees with a signed anchor
	ProblemPruned   = "pruned out of place" // a payload marked pruned where no prune puts one
)

// PrunedChecker is the part of a store that finds pruned payloads no
// prune could have left (see Pruned): a prune blanks every event of a
// finished operation and removes its record, so a pruned event whose
// operation still has a record, keeps an unpruned event or never finished
// was blanked by hand. It needs the records, so it is the store's; the
// first such event is returned, nil when there is none.
type PrunedChecker interface {
	PrunedMisplaced(ctx context.Context) (*ChainError, error)
}

// ChainError names the first event that breaks the chain and why. Pos is 0
// when no event can be named (an empty store that should not be).
type ChainError struct {
	Pos         int64
	OperationID string
	Seq         int64
	Problem     string
	Detail      string
}

func (e *ChainError) Error() string {
	if e.Pos == 0 {
		return fmt.Sprintf("audit: %s: %s", e.Problem, e.Detail)
	}
	return fmt.Sprintf("audit: event pos %d (operation %s seq %d): %s: %s", e.Pos, e.OperationID, e.Seq, e.Problem, e.Detail)
}

func chainErr(e pollwarden.Event, problem, format string, args ...any) *ChainError {
	return &ChainError{Pos: e.Pos, OperationID: e.OperationID, Seq: e.Seq, Problem: problem, Detail: fmt.Sprintf(format, args...)}
}

// Checkpoint is a (position, hash) pair known from elsewhere: a head
// written down earlier, or a signed Anchor.
type Checkpoint struct {
	Pos  int64
	Hash string
	// What names the checkpoint in errors ("anchor of 2030-01-02T10:00:00Z").
	What string
}

// Verifier walks a store's chain in position order, one event at a time,
// in constant memory. Give it every event from pos 1 with Add, then call
// Finish.
type Verifier struct {
	// Head, when set, is a hash recorded earlier; Finish fails unless some
	// event carries it. Events appended after it was recorded are fine.
	Head string
	// Checkpoints must each match the event at their position; Finish fails
	// when the store ends before one of them (a cut tail or a store rolled
	// back to an older copy).
	Checkpoints []Checkpoint

	pos       int64
	hash      string
	last      pollwarden.Event
	headFound int64
	ops       int64
	pruned    int64
	// digestFrom is the first position whose event carries a
	// PayloadDigest; every later event must carry one too.
	digestFrom int64
	err        *ChainError
}

// Add checks the next event: its position follows the last one, its
// PrevHash is the last one's hash, and its hash matches its content (see
// contentProblem): a pruned event with a PayloadDigest is rehashed from
// what the prune kept, so its kind and time are checked too. Once an event
// carries a digest every later one must, so a digest cannot be blanked to
// fall back to the older rule. The first failure is returned and kept;
// later calls return it again.
func (v *Verifier) Add(e pollwarden.Event) error {
	if v.err != nil {
		return v.err
	}
	switch want := v.pos + 1; {
	case e.Pos > want:
		v.err = chainErr(e, ProblemGap, "expected pos %d next: %d event(s) before this one were deleted", want, e.Pos-want)
	case e.Pos < want:
		v.err = chainErr(e, ProblemOrder, "expected pos %d next: the position repeats or goes back", want)
	case e.PrevHash != v.hash:
		v.err = chainErr(e, ProblemPrevHash, "prev_hash %s does not match the hash %s of the event at pos %d: an event was inserted, deleted or moved here",
			short(e.PrevHash), short(v.hash), v.pos)
	case e.Seq < 1:
		v.err = chainErr(e, ProblemSeq, "seq %d is not positive", e.Seq)
	}
	if v.err == nil && e.PayloadDigest == "" && v.digestFrom > 0 {
		v.err = chainErr(e, ProblemHash, "the event has no payload digest though the event at pos %d and every one since has one: its digest was removed",
			v.digestFrom)
	}
	if v.err == nil {
		v.err = contentProblem(e)
	}
	if v.err == nil {
		for _, c := range v.Checkpoints {
			if c.Pos == e.Pos && c.Hash != e.Hash {
				v.err = chainErr(e, ProblemAnchor, "%s says the event at pos %d has hash %s, the store's has %s: the history was rewritten",
					c.What, c.Pos, short(c.Hash), short(e.Hash))
			}
		}
	}
	if v.err != nil {
		return v.err
	}
	if v.Head != "" && v.headFound == 0 && e.Hash == v.Head {
		v.headFound = e.Pos
	}
	if e.Seq == 1 {
		v.ops++
	}
	if Pruned(e) {
		v.pruned++
	}
	if e.PayloadDigest != "" && v.digestFrom == 0 {
		v.digestFrom = e.Pos
	}
	v.pos, v.hash, v.last = e.Pos, e.Hash, e
	v.last.Payload, v.last.Data = nil, pollwarden.EventData{}
	return nil
}

// contentProblem checks e's hash against its content. An event with a
// PayloadDigest is hashed over the digest (Encode), and its payload, unless
// pruned, must match the digest; so a pruned one still binds its kind,
// time, place and the digest of what was dropped. An older event without
// a digest is hashed over its payload, which a prune dropped: a pruned one
// of those has nothing left to hash, its stored hash is taken as is, and
// the next event's PrevHash, which that event's own hash covers, is what
// holds it in place.
func contentProblem(e pollwarden.Event) *ChainError {
	if e.PayloadDigest != "" && !Pruned(e) {
		if got := PayloadDigest(e.Payload); got != e.PayloadDigest {
			return chainErr(e, ProblemHash, "stored payload digest %s, payload digests to %s: the payload was edited", short(e.PayloadDigest), short(got))
		}
	}
	if e.PayloadDigest == "" && Pruned(e) {
		return nil
	}
	if got := Hash(e); got != e.Hash {
		what := "content"
		if Pruned(e) {
			what = "what the prune kept (place, kind, time, payload digest)"
		}
		return chainErr(e, ProblemHash, "stored hash %s, %s hashes to %s: the event was edited", short(e.Hash), what, short(got))
	}
	return nil
}

// Finish reports what only the end of the walk shows: a head or a
// checkpoint that was never reached.
func (v *Verifier) Finish() error {
	if v.err != nil {
		return v.err
	}
	end := &ChainError{Pos: v.last.Pos, OperationID: v.last.OperationID, Seq: v.last.Seq}
	if v.Head != "" && v.headFound == 0 {
		end.Problem = ProblemHead
		end.Detail = fmt.Sprintf("no event has the known head %s; the store ends here, at pos %d: events were cut from the end, the store was rolled back, or the head belongs to another store",
			short(v.Head), v.pos)
		v.err = end
		return end
	}
	for _, c := range v.Checkpoints {
		if c.Pos > v.pos {
			end.Problem = ProblemAnchor
			end.Detail = fmt.Sprintf("%s covers pos %d but the store ends at pos %d: events were cut from the end or the store was rolled back to an older copy",
				c.What, c.Pos, v.pos)
			v.err = end
			return end
		}
	}
	return nil
}

// Pos and Hash are the last verified event's: the head of the store once
// the walk is complete.
func (v *Verifier) Pos() int64 { return v.pos }

// Hash is the last verified event's hash.
func (v *Verifier) Hash() string { return v.hash }

// Operations counts the operations whose first event (seq 1) was seen.
func (v *Verifier) Operations() int64 { return v.ops }

// Pruned counts the events whose payload a prune dropped: their hashes
// were taken as stored, linked to their neighbours, not recomputed.
func (v *Verifier) Pruned() int64 { return v.pruned }

// HeadPos is the position of the event carrying Head (0: not seen).
func (v *Verifier) HeadPos() int64 { return v.headFound }

// VerifyChain checks a complete chain given in position order, from pos 1.
// It is Verifier for events already in memory.
func VerifyChain(events []pollwarden.Event) error {
	var v Verifier
	for _, e := range events {
		if err := v.Add(e); err != nil {
			return err
		}
	}
	return v.Finish()
}

// VerifyOperation checks one operation's events, in position order as a
// store lists them: seqs 1, 2, 3… with rising positions, every hash
// matching its content, and every PrevHash equal to the hash of the
// store's event at Pos-1, which prev looks up (ok false when no event has
// that position). It returns the first break, or nil. It cannot see events
// cut from the operation's end; the store-wide Verifier with a head can.
func VerifyOperation(events []pollwarden.Event, prev func(pos int64) (hash string, ok bool, err error)) (*ChainError, error) {
	var lastPos int64
	for i, e := range events {
		if want := int64(i + 1); e.Seq != want {
			return chainErr(e, ProblemSeq, "expected seq %d: the operation's events are missing, repeated or out of order", want), nil
		}
		if e.Pos <= lastPos {
			return chainErr(e, ProblemOrder, "pos %d does not come after the previous event's pos %d", e.Pos, lastPos), nil
		}
		lastPos = e.Pos
		if ce := contentProblem(e); ce != nil {
			return ce, nil
		}
		want := ""
		if e.Pos > 1 {
			h, ok, err := prev(e.Pos - 1)
			if err != nil {
				return nil, err
			}
			if !ok {
				return chainErr(e, ProblemGap, "the store has no event at pos %d, just before this one: it was deleted", e.Pos-1), nil
			}
			want = h
		}
		if e.PrevHash != want {
			return chainErr(e, ProblemPrevHash, "prev_hash %s does not match the hash %s of the event at pos %d: an event was inserted, deleted or moved here",
				short(e.PrevHash), short(want), e.Pos-1), nil
		}
	}
	return nil, nil
}

// short abbreviates a hash for messages; 16 hex digits identify it.
func short(h string) string {
	if h == "" {
		return `""`
	}
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

// Scanner is the part of a store that a walk reads.
type Scanner interface {
	EventScan(ctx context.Context, p pollwarden.EventScanParams) ([]pollwarden.Event, error)
}

// Walk feeds every event of s to v in position order, pageSize events at a
// time (so memory stays bounded whatever the store's size), then calls
// Finish. It returns a *ChainError for a broken chain, any other error for
// a store that could not be read. Events appended during the walk are
// included until a page comes back empty.
func (v *Verifier) Walk(ctx context.Context, s Scanner, pageSize int) error {
	after := v.pos
	for {
		page, err := s.EventScan(ctx, pollwarden.EventScanParams{AfterPos: after, Limit: pageSize})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return v.Finish()
		}
		for _, e := range page {
			if err := v.Add(e); err != nil {
				return err
			}
		}
		after = page[len(page)-1].Pos
	}
}
