package sqlite_test

import (
	"testing"

	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/storetest"
)

func TestOutboxConformance(t *testing.T) {
	storetest.RunOutbox(t, func(t *testing.T) storetest.OutboxStore { return openTemp(t, sqlite.Options{}) })
}
