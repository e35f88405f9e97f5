package operations

import (
	"fmt"
	"maps"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// resumeRefusal refuses, before anything is sent, to resume the stored
// operation with a request that differs from the one it was created for
// (R4), saying in words which of contract, job, credential, variables or
// status request differs: fingerprints alone tell a person nothing. Its
// field is "contract" when the contract is among them, so a door that
// suggests the command to resume knows which contract to name. nil when
// the request matches.
func resumeRefusal(stored, asked *pollwarden.Operation, ct *pollwarden.ContractSpec) *Problems {
	diffs, contractSame := resumeDiffs(stored, asked, ct)
	if len(diffs) == 0 {
		return nil
	}
	field := "operation_id"
	if !contractSame {
		field = "contract"
	}
	p := refuse(Conflict, field, "operation %s cannot be resumed with this request: %s. Nothing was sent and the record is unchanged.",
		display.Value(stored.ID), strings.Join(diffs, "; "))
	p.ID = stored.ID
	return p
}

// submitRefusal refuses, before anything is sent, to drive on the stored
// operation with a submission other than the one it was created for: not
// a submission at all, or another contract, body or variables (its
// fingerprint). nil when fingerprint, the request's, matches.
func submitRefusal(stored *pollwarden.Operation, fingerprint string) *Problems {
	if policy.ResumesSubmission(stored, fingerprint) {
		return nil
	}
	what := "it was created for another submission (another contract, body or variables)"
	if stored.Submission == nil {
		what = "it watches a job its caller submitted, not a submission of this request"
	}
	p := refuse(Conflict, "operation_id", "operation %s cannot be resumed with this request: %s. Nothing was sent and the record is unchanged.",
		display.Value(stored.ID), what)
	p.ID = stored.ID
	return p
}

// resumeDiffs names each part of the request that differs from the one
// the stored operation was created for; contractSame is false when the
// contract's name or status call is among them.
func resumeDiffs(stored, asked *pollwarden.Operation, ct *pollwarden.ContractSpec) (out []string, contractSame bool) {
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
	return "status URL " + display.Value(pollwarden.ShownURL(op.StatusURL))
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
