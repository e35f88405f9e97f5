package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

// BenchmarkClaims: the CPU of a claim made alone, among concurrent ones,
// or in one OperationClaimMany, with and without a quota key
// (storetest.BenchClaims).
func BenchmarkClaims(b *testing.B) {
	storetest.BenchClaims(b, func(b *testing.B) pollwarden.Store {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "pollwarden.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
