package sqlstore

import (
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// ErrSealing: the store's sealing and the key given to Open disagree, so
// events cannot be appended. Such errors also wrap audit.ErrNoKey or
// audit.ErrWrongKey when they apply. Both drivers return this one value.
var ErrSealing = errors.New("audit key does not fit the store")

// keyID is the id of s, "" for none (plain payloads).
func keyID(s audit.Sealer) string {
	if s == nil {
		return ""
	}
	return s.KeyID()
}

// sealMismatch explains why a store opened with key mine ("" = none)
// cannot append to a store sealed with stored ("" = plain); nil when it can.
func sealMismatch(stored, mine string) error {
	switch {
	case stored == mine:
		return nil
	case stored == "":
		return fmt.Errorf("%w: this store keeps event payloads plain and cannot start sealing them; use a new store for sealed payloads, or give no audit key", ErrSealing)
	case mine == "":
		return fmt.Errorf("%w: %w (this store seals them with key %s); nothing was written", ErrSealing, audit.ErrNoKey, stored)
	default:
		return fmt.Errorf("%w: %w: the store seals with key %s, the given key is %s; nothing was written", ErrSealing, audit.ErrWrongKey, stored, mine)
	}
}

// publishEvents hands the stored numbering back to the caller's slice once
// the transaction has committed.
func publishEvents(dst, stored []pollwarden.Event) {
	for i := range stored {
		dst[i].Pos = stored[i].Pos
		dst[i].OperationID = stored[i].OperationID
		dst[i].Seq = stored[i].Seq
		dst[i].PrevHash = stored[i].PrevHash
		dst[i].Hash = stored[i].Hash
		dst[i].Payload = stored[i].Payload
		dst[i].PayloadDigest = stored[i].PayloadDigest
	}
}
