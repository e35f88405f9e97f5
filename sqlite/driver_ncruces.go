//go:build ncruces

package sqlite

import (
	"errors"

	ncruces "github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver" // registers the "sqlite3" driver
)

// driverName under -tags ncruces is github.com/ncruces/go-sqlite3's, for
// measuring the store on the other pure-Go driver (docs/BENCHMARKS.md); it
// takes the same file: URI, _pragma and _txlock parameters.
const driverName = "sqlite3"

func errorCode(err error) (int, bool) {
	var se *ncruces.Error
	var code ncruces.ErrorCode
	var ext ncruces.ExtendedErrorCode
	switch {
	case errors.As(err, &se):
		return int(se.ExtendedCode()), true
	case errors.As(err, &ext):
		return int(ext), true
	case errors.As(err, &code):
		return int(code), true
	}
	return 0, false
}
