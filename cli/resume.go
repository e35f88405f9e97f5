package cli

import (
	"fmt"
	"maps"
	neturl "net/url"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// resumeCommand is the wait command that resumes op as it was created
// (its id alone when the store keeps its contract; its contract, job and
// variables for a record from before), in the store named by storeFlag (--store as given; empty when the
// environment or the default named it, which the command finds again).
func resumeCommand(op *pollwarden.Operation, contractArg, storeFlag string) string {
	if op.ContractFingerprint != "" {
		// The store keeps its contract, job and variables: the id says it all.
		return fmt.Sprintf("pollwarden wait --operation-id %s%s", shellWord(op.ID), storeWords(storeFlag))
	}
	job := "--job-id " + shellWord(op.ProviderJobID)
	if op.ProviderJobID == "" {
		job = "--status-url " + shellWord(op.StatusURL)
	}
	for _, k := range slices.Sorted(maps.Keys(op.Vars)) {
		job += " --var " + shellWord(k+"="+op.Vars[k])
	}
	return fmt.Sprintf("pollwarden wait --contract %s %s --operation-id %s%s", shellWord(contractArg), job, shellWord(op.ID), storeWords(storeFlag))
}

// storeWords is " --store FLAG" for a store given on the command line; a
// PostgreSQL URL's password is masked, as the line goes to a terminal
// and perhaps a log.
func storeWords(flag string) string {
	if flag == "" {
		return ""
	}
	if isPostgresURL(flag) {
		if u, err := neturl.Parse(flag); err == nil {
			flag = u.Redacted()
		}
	}
	return " --store " + shellWord(flag)
}

// shellWord quotes s for a POSIX shell when it holds anything but plain
// characters, so that a printed command can be pasted as it is. Control
// characters are escaped first: the result is for a terminal.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(display.Text(s), "'", `'\''`) + "'"
}
