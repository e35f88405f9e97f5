package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/postgres"
)

// TestStoreNowIsTheDatabasesClock: the store offers its clock to the
// decision clock (pollwarden.StoreClock), and what it reads is the
// server's time, moving forward, not a caller's.
func TestStoreNowIsTheDatabasesClock(t *testing.T) {
	testURL(t)
	var st pollwarden.Store = openFresh(t, postgres.Options{})
	sc, ok := st.(pollwarden.StoreClock)
	if !ok {
		t.Fatal("the PostgreSQL store offers no clock")
	}
	ctx := context.Background()
	a, err := sc.StoreNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sc.StoreNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server runs on this machine in the tests: its clock is within a
	// minute of ours, and never goes back between two reads.
	if d := time.Since(a); d < -time.Minute || d > time.Minute || b.Before(a) {
		t.Fatalf("database clock %s then %s, local %s", a, b, time.Now())
	}
}
