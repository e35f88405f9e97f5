package cli

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/sqlite"
)

// storePath resolves --store: the flag, else $POLLWARDEN_STORE, else
// pollwarden.db under the user's state directory ($XDG_STATE_HOME, else
// ~/.local/state/pollwarden), which is created unless readOnly.
func (env Env) storePath(flag string, readOnly bool) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if v := env.lookup("POLLWARDEN_STORE"); v != "" {
		return v, nil
	}
	dir := env.lookup("XDG_STATE_HOME")
	if dir == "" {
		home := env.lookup("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", usage(fmt.Errorf("no --store given, POLLWARDEN_STORE unset and no home directory: %w", err))
			}
			home = h
		}
		dir = filepath.Join(home, ".local", "state")
	}
	dir = filepath.Join(dir, "pollwarden")
	if readOnly {
		return filepath.Join(dir, "pollwarden.db"), nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", usage(fmt.Errorf("create state directory for the default store: %w", err))
	}
	return filepath.Join(dir, "pollwarden.db"), nil
}

// store is what the commands need of a driver: the Store and the check
// that an audit key fits it before anything is written.
type store interface {
	pollwarden.Store
	CheckSealing(ctx context.Context) error
}

// openStore opens the store for a command that only reads, without an
// audit key: records, leases and the raw chain are readable, sealed
// payloads are not. It never creates or migrates a store: a missing or
// empty one is bad input (exit 2) naming the path, and the path is left
// as it was. So is a path that cannot hold a store, or a file that is not
// one.
func (env Env) openStore(ctx context.Context, flag string) (store, error) {
	return env.openWith(ctx, flag, nil, true)
}

// openWith opens a SQLite file, or PostgreSQL for a postgres:// URL (the
// fleet store; objects in the "pollwarden" schema). With readOnly the
// store must exist already and is neither created nor migrated.
func (env Env) openWith(ctx context.Context, flag string, sealer audit.Sealer, readOnly bool) (store, error) {
	path, err := env.storePath(flag, readOnly)
	if err != nil {
		return nil, err
	}
	if isPostgresURL(path) {
		url, schema, err := splitSchema(path)
		if err != nil {
			return nil, usage(err)
		}
		st, err := postgres.Open(ctx, url, postgres.Options{Sealer: sealer, Schema: schema, ReadOnly: readOnly})
		if errors.Is(err, postgres.ErrNoStore) || errors.Is(err, postgres.ErrSchemaBehind) {
			return nil, usage(err) // the URL names no store: the user's to fix
		}
		if err != nil {
			return nil, err // the database is unreachable or refused: not the user's syntax
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{Sealer: sealer, ReadOnly: readOnly})
	if err != nil {
		return nil, usage(err)
	}
	return st, nil
}

// splitSchema takes pollwarden's own "schema" query parameter out of a
// PostgreSQL URL (the driver would send it to the server as a setting).
func splitSchema(raw string) (rest, schema string, err error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("--store: not a PostgreSQL URL: %w", err)
	}
	q := u.Query()
	schema = q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// auditKeyHelp is the --audit-key flag's help text.
const auditKeyHelp = "sealing key file: event payloads are encrypted at rest with it (default $POLLWARDEN_AUDIT_KEY_FILE; none: plain)"

// sealKey loads the audit sealing key named by --audit-key, else by
// $POLLWARDEN_AUDIT_KEY_FILE; nil when neither is set.
func (env Env) sealKey(flag string) (*audit.SealKey, error) {
	path := flag
	if path == "" {
		path = env.lookup("POLLWARDEN_AUDIT_KEY_FILE")
	}
	if path == "" {
		return nil, nil
	}
	k, err := audit.LoadSealKey(path)
	if err != nil {
		return nil, usage(fmt.Errorf("--audit-key: %w", err))
	}
	return k, nil
}

// openStoreKey opens the store with the audit key of keyFlag (or the
// environment), which seals payloads on append and opens them on read.
// With write set, a key that does not fit the store (missing for a sealed
// store, another key, or a key for a store that keeps payloads plain) is
// refused before anything is written: exit 2. Without it the store is
// opened read-only, as by openStore.
func (env Env) openStoreKey(ctx context.Context, flag, keyFlag string, write bool) (store, audit.Sealer, error) {
	var sealer audit.Sealer
	k, err := env.sealKey(keyFlag)
	if err != nil {
		return nil, nil, err
	}
	if k != nil {
		sealer = k // not a typed nil in the interface
	}
	st, err := env.openWith(ctx, flag, sealer, !write)
	if err != nil {
		return nil, nil, err
	}
	if write {
		if err := st.CheckSealing(ctx); err != nil {
			st.Close()
			return nil, nil, usage(err)
		}
	}
	return st, sealer, nil
}

// keyError marks a payload that cannot be read for want of the right key
// as bad input (exit 2).
func keyError(err error) error {
	// sqlite.ErrSealing and postgres.ErrSealing are the same value.
	if errors.Is(err, audit.ErrNoKey) || errors.Is(err, audit.ErrWrongKey) || errors.Is(err, sqlite.ErrSealing) {
		return usage(err)
	}
	return err
}
