//go:build !ncruces

package sqlite

import (
	"errors"

	msqlite "modernc.org/sqlite" // registers the "sqlite" driver
)

// driverName is the database/sql driver of the store: modernc.org/sqlite,
// measured faster on a step than github.com/ncruces/go-sqlite3 (built with
// -tags ncruces for the comparison; docs/BENCHMARKS.md).
const driverName = "sqlite"

// errorCode is the SQLite result code an error of the driver carries.
func errorCode(err error) (int, bool) {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code(), true
}
