package postgres_test

import (
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/storetest"
)

// BenchmarkClaims: the client's CPU for a claim made alone, among
// concurrent ones, or in one OperationClaimMany, with and without a quota
// key (storetest.BenchClaims), the leases on the caller's clock.
func BenchmarkClaims(b *testing.B) {
	storetest.BenchClaims(b, func(b *testing.B) pollwarden.Store {
		return openIn(b, freshSchema(b), postgres.CallerClock(postgres.Options{MaxConns: 16}))
	})
}
