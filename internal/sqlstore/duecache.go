package sqlstore

import (
	"sync"

	"github.com/pollwarden/pollwarden"
)

// maxDueCache bounds the decoded records kept for due listings: a
// scheduler reads the same oldest-due batch (256 by default) again on
// every wake-up, so a few batches' worth is what saves the work, and the
// memory stays small next to a store of a million waiting operations.
const maxDueCache = 1024

// dueCache keeps the records a due listing decoded, by operation id, with
// the exact stored text they were decoded from. Profiling a daemon that
// creates operations while polling showed half its CPU in decoding the
// JSON records of the due batch the scheduler lists at each wake-up; a
// record whose stored text is unchanged decodes to the same operation, so
// a copy of the earlier answer is given instead. Comparing the whole text
// (not only the version) keeps the answer exactly what decoding would
// give, even for a row changed behind the store's back.
type dueCache struct {
	mu sync.Mutex
	m  map[string]cachedRecord
}

type cachedRecord struct {
	version int64
	rec     string
	op      *pollwarden.Operation
}

// decode is decodeRecord through the cache; the caller gets its own copy.
func (c *dueCache) decode(id string, version int64, rec string) (*pollwarden.Operation, error) {
	c.mu.Lock()
	hit, ok := c.m[id]
	c.mu.Unlock()
	if ok && hit.version == version && hit.rec == rec {
		return hit.op.Clone(), nil
	}
	op, err := decodeRecord(version, rec)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxDueCache {
		c.m = make(map[string]cachedRecord, maxDueCache)
	}
	c.m[id] = cachedRecord{version: version, rec: rec, op: op.Clone()}
	c.mu.Unlock()
	return op, nil
}
