package audit

import (
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// Problems a ChainError reports.
const (
	ProblemSeq      = "seq gap"            // a seq is missing, repeated or out of order
	ProblemPrevHash = "prev_hash mismatch" // the event does not point at its predecessor
	ProblemHash     = "hash mismatch"      // the event's content does not match its hash
	ProblemHead     = "head mismatch"      // no event carries the known head: the tail was cut
)

// ChainError names the first event that breaks an operation's chain and why.
type ChainError struct {
	OperationID string
	Seq         int64
	Problem     string
	Detail      string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit: operation %q event seq %d: %s: %s", e.OperationID, e.Seq, e.Problem, e.Detail)
}

// VerifyChain checks the events of one or more operations, in the order
// given (as a store or an export lists them). Events chain per operation:
// the first has seq 1 and PrevHash "", each next one has seq+1, PrevHash
// equal to its predecessor's Hash, and Hash equal to Hash(PrevHash, event).
// Events of different operations may be interleaved. The first violation is
// returned as a *ChainError; nil means every chain is intact.
//
// A truncated tail cannot be seen from the events alone; use VerifyHead
// with the last hash known from elsewhere.
func VerifyChain(events []pollwarden.Event) error {
	type state struct {
		seq  int64
		hash string
	}
	last := map[string]state{}
	for _, e := range events {
		prev := last[e.OperationID] // zero: nothing seen yet
		bad := func(problem, format string, args ...any) error {
			return &ChainError{OperationID: e.OperationID, Seq: e.Seq, Problem: problem, Detail: fmt.Sprintf(format, args...)}
		}
		switch want := prev.seq + 1; {
		case e.Seq > want:
			return bad(ProblemSeq, "expected seq %d, events are missing", want)
		case e.Seq < want:
			return bad(ProblemSeq, "expected seq %d, event is repeated or out of order", want)
		}
		if e.PrevHash != prev.hash {
			return bad(ProblemPrevHash, "prev_hash %q, previous event's hash is %q", e.PrevHash, prev.hash)
		}
		if got := Hash(e.PrevHash, e); got != e.Hash {
			return bad(ProblemHash, "stored %q, content hashes to %q", e.Hash, got)
		}
		last[e.OperationID] = state{seq: e.Seq, hash: e.Hash}
	}
	return nil
}

// VerifyHead checks the events with VerifyChain and then that one of them
// carries head, a hash recorded elsewhere earlier (a ticket, a log line).
// This detects events cut off the end, which the chain alone cannot; events
// legitimately appended after head was recorded are accepted.
func VerifyHead(events []pollwarden.Event, head string) error {
	if err := VerifyChain(events); err != nil {
		return err
	}
	for _, e := range events {
		if e.Hash == head {
			return nil
		}
	}
	c := &ChainError{Problem: ProblemHead, Detail: fmt.Sprintf("no event has hash %q: events were removed from the end, or the head belongs to another trail", head)}
	if n := len(events); n > 0 {
		c.OperationID, c.Seq = events[n-1].OperationID, events[n-1].Seq
	}
	return c
}
