package audit

import (
	"fmt"

	"github.com/pollwarden/pollwarden"
)

// PrunedPayload replaces the payload of an event whose operation was
// pruned. A recorded payload is canonical JSON or a sealed box, never
// this word, so it can only mean pruned.
const PrunedPayload = "pruned"

// Pruned reports whether e's payload was dropped by a prune: the event
// keeps its place, kind, time and both hashes in the chain, so the chain
// around it still verifies, but its content is gone.
func Pruned(e pollwarden.Event) bool { return string(e.Payload) == PrunedPayload }

// prunedRun tells a run of pruned events as one line: what is left of
// them is their kind and time, which say nothing a person needs.
func (t *Teller) prunedRun(events []pollwarden.Event, i int) (text string, last int) {
	if !Pruned(events[i]) {
		return "", -1
	}
	last = i
	for last+1 < len(events) && Pruned(events[last+1]) {
		last++
	}
	n := last - i + 1
	return fmt.Sprintf("%d event%s pruned: the record was removed, the chain keeps their hashes", n, map[bool]string{true: "", false: "s"}[n == 1]), last
}
