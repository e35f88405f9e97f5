package storetest

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden/audit"
)

// SealKey is a sealing key made of the byte b repeated, for a driver's
// tests of sealed stores.
func SealKey(t testing.TB, b byte) *audit.SealKey {
	t.Helper()
	k, err := audit.NewSealKey(bytes.Repeat([]byte{b}, audit.SealKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// MigrationCount is the number of migration files in dir: a driver's test
// checks that every one is applied exactly once.
func MigrationCount(t testing.TB, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files in %s: %v", dir, err)
	}
	return len(files)
}
