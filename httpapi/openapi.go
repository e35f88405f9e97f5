package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/pollwarden/pollwarden"
)

// openAPIDoc describes every route, its role, bodies and answers. It is a
// file rather than generated code so that it reads and diffs as the
// contract it is; a test checks it against the route table.
//
//go:embed openapi.json
var openAPIDoc []byte

func (a *api) openAPI(w http.ResponseWriter, _ *http.Request, _ pollwarden.Actor) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc)
	return nil
}
