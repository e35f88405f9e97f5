package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// checkResume refuses, before anything is sent, to resume a stored
// operation with a request that differs from the one it was created for,
// and says in words which of contract, job, credential or status request
// differs and how to go on. Fingerprints alone tell a person nothing.
// An id not yet stored, or a request that matches, passes. A refusal is
// a usage error (exit 2); a store that cannot be read is not.
// contractArg is --contract as given, used in the suggested command when
// the contract is not what differs.
func checkResume(ctx context.Context, st pollwarden.Store, ex *contract.Extractor, contractArg, storeFlag string, p policy.NewParams, now time.Time) error {
	stored, err := st.OperationGet(ctx, p.ID)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	asked, _, err := policy.NewOperation(ex.Contract(), p, now)
	if err != nil {
		return nil // the create path reports its own problems
	}
	diffs, contractSame := resumeDiffs(stored, asked, ex.Contract())
	if len(diffs) == 0 {
		return nil
	}
	if !contractSame {
		contractArg = stored.Contract
	}
	return usage(fmt.Errorf("operation %s cannot be resumed with this request: %s. Nothing was sent and the record is unchanged. "+
		"To resume it, run: %s; to wait on this job as a new operation, leave out --operation-id or give a new one",
		display.Value(stored.ID), strings.Join(diffs, "; "), resumeCommand(stored, contractArg, storeFlag)))
}

// resumeDiffs names each part of the request that differs from the one
// the stored operation was created for; contractSame is false when the
// contract's name or status call is among them.
func resumeDiffs(stored, asked *pollwarden.Operation, ct *pollwarden.Contract) (out []string, contractSame bool) {
	contractSame = stored.Contract == asked.Contract
	if stored.Contract != asked.Contract {
		out = append(out, fmt.Sprintf("the contract differs (created under %s, asked with %s)",
			display.Value(stored.Contract), display.Value(asked.Contract)))
	}
	switch {
	case stored.ProviderJobID != asked.ProviderJobID && stored.ProviderJobID != "" && asked.ProviderJobID != "":
		out = append(out, fmt.Sprintf("the job differs (created for job %s, asked for job %s)",
			display.Value(stored.ProviderJobID), display.Value(asked.ProviderJobID)))
	case stored.ProviderJobID != asked.ProviderJobID || stored.StatusURL != asked.StatusURL:
		out = append(out, fmt.Sprintf("the job differs (created for %s, asked for %s)", jobWords(stored), jobWords(asked)))
	}
	if stored.CredentialName != asked.CredentialName {
		out = append(out, fmt.Sprintf("the credential differs (created with %s, asked with %s)",
			credWords(stored.CredentialName), credWords(asked.CredentialName)))
	}
	if !maps.Equal(stored.Vars, asked.Vars) && (len(stored.Vars) > 0 || len(asked.Vars) > 0) {
		out = append(out, fmt.Sprintf("the job's variables differ (created with %s, asked with %s)",
			varsWords(stored.Vars), varsWords(asked.Vars)))
	}
	if len(out) == 0 && stored.Fingerprint != asked.Fingerprint {
		// Name, job and credential agree: what is left in the fingerprint
		// is the contract's status call, its method or URL template.
		what := "the status request differs (contract " + display.Value(ct.Name) + " now calls the provider another way: its status method or URL changed)"
		if stored.ContractDigest != nil && stored.ContractDigest["status"] == policy.ContractDigest(ct)["status"] {
			what = "the status request differs (its method or URL is not the one the operation was created with)"
		}
		out = append(out, what)
		contractSame = false
	}
	return out, contractSame
}

func jobWords(op *pollwarden.Operation) string {
	if op.ProviderJobID != "" {
		return "job " + display.Value(op.ProviderJobID)
	}
	return "status URL " + display.Value(op.StatusURL)
}

func varsWords(v map[string]string) string {
	if len(v) == 0 {
		return "none"
	}
	return display.Text(policy.VarsText(v))
}

func credWords(ref string) string {
	if ref == "" {
		return "no credential"
	}
	return display.Value(ref)
}

// resumeCommand is the wait command that resumes op as it was created,
// in the store named by storeFlag (--store as given; empty when the
// environment or the default named it, which the command finds again).
func resumeCommand(op *pollwarden.Operation, contractArg, storeFlag string) string {
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
