package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// storePath resolves --store: the flag, else $POLLWARDEN_STORE, else
// pollwarden.db under the user's state directory ($XDG_STATE_HOME, else
// ~/.local/state/pollwarden).
func (env Env) storePath(flag string) (string, error) {
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", usage(fmt.Errorf("create state directory for the default store: %w", err))
	}
	return filepath.Join(dir, "pollwarden.db"), nil
}

// openStore opens the SQLite store at path. A path that cannot hold a
// store, or a file that is not one, is bad input (exit 2) and the file is
// left untouched.
func (env Env) openStore(ctx context.Context, flag string) (pollwarden.Store, error) {
	path, err := env.storePath(flag)
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return nil, usage(err)
	}
	return st, nil
}
