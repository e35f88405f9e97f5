package postgres_test

import (
	"testing"

	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/storetest"
)

func TestOutboxConformance(t *testing.T) {
	testURL(t)
	storetest.RunOutbox(t, func(t *testing.T) storetest.OutboxStore { return openFresh(t, postgres.Options{}) })
}
