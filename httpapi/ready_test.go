package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
)

// failingWrites is a real SQLite store whose write probe fails, as on a
// full disk (the process test, TestServeReadyzWhileTheStoreIsLocked, makes
// the real store refuse writes).
type failingWrites struct{ *sqlite.Store }

func (failingWrites) ProbeWrite(context.Context) error {
	return errors.New("disk I/O error writing /var/lib/secret-layout/pw.db-wal")
}

// TestReadyz: 200 on a store that takes a write; 503 not_ready, with no
// detail of the cause, on one that does not, while /healthz stays 200.
func TestReadyz(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := tokens.New(tokens.Spec{Name: "alice", Role: pollwarden.RoleApprover, SHA256: tokens.Hash(approverToken)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		store pollwarden.Store
		want  int
	}{{"writable", st, http.StatusOK}, {"refusing writes", failingWrites{st}, http.StatusServiceUnavailable}} {
		ctl := controller.New(controller.Options{Store: c.store, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
			Prober: prober.New(prober.Options{Now: time.Now})})
		h := NewHandler(Options{Ops: operations.New(operations.Options{Controller: ctl, Contracts: set}), Tokens: tokens,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		srv := httptest.NewServer(h)
		for path, want := range map[string]int{"/readyz": c.want, "/healthz": http.StatusOK} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: %s %d, want %d: %s", c.name, path, resp.StatusCode, want, b)
			}
			if path == "/readyz" && want != http.StatusOK {
				var e errorBody
				if json.Unmarshal(b, &e) != nil || e.Error.Code != codeNotReady || strings.Contains(string(b), "secret-layout") {
					t.Errorf("%s: %s answered %s", c.name, path, b)
				}
			}
		}
		srv.Close()
	}
}
