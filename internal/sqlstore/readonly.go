package sqlstore

import "errors"

// ErrNoStore: a read-only open found no store where it was pointed (a
// missing or empty SQLite file, a PostgreSQL schema without pollwarden's
// tables). A read-only open never creates one. Both drivers return this
// one value.
var ErrNoStore = errors.New("no pollwarden store")

// ErrSchemaBehind: a read-only open found a store whose schema is older
// than this pollwarden's, and a read-only open never migrates.
var ErrSchemaBehind = errors.New("the store's schema is older than this pollwarden")
