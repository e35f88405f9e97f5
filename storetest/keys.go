package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// A key nothing took from has no row: KeyGet says ErrNotFound and
// KeyList is empty.
func testKeyNone(t *testing.T, s pollwarden.Store) {
	ctx := context.Background()
	if _, err := s.KeyGet(ctx, "env:NONE"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("KeyGet of an unwritten key: %v, want ErrNotFound", err)
	}
	keys, err := s.KeyList(ctx)
	if err != nil || len(keys) != 0 {
		t.Fatalf("KeyList of a new store: %v, %v; want none", keys, err)
	}
}
