// Package sqlstore is pollwarden's SQL store, written once: the Store and
// Outbox logic (checks, claim, lease and version fencing, update, event
// append, publish, listing) and the migrations runner, over a small
// Dialect that each driver (sqlite, postgres) implements. A driver brings
// only what really differs: how a write transaction is taken, how rows
// are locked, whose clock judges a lease, and how its client reports
// rows. Keeping one copy means the two stores cannot drift apart on a rule
// the conformance suite might not catch.
package sqlstore
