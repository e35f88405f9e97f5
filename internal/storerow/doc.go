// Package storerow holds what the SQLite and PostgreSQL drivers share about
// how a record is stored: the fixed-width time form, lease fencing, and the
// audit-sealing checks. Keeping one copy means the two stores cannot drift
// apart on a rule the conformance suite might not catch.
package storerow
