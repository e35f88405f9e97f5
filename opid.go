package pollwarden

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// operationIDPattern keeps an operation id usable as one URL path
// segment, a file name and a shell word as it is: no spaces, slashes,
// control characters, leading dot ("..") or more than 128 bytes.
var operationIDPattern = regexp.MustCompile(`^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}$`)

// CheckOperationID refuses an operation id a caller chose that does not
// fit the pattern every door shares; field is how the door names it
// ("operation_id", "--operation-id").
func CheckOperationID(field, id string) error {
	if operationIDPattern.MatchString(id) {
		return nil
	}
	return Refuse(ErrInvalid, "operation_id", "%s %s: use 1 to 128 letters, digits, '-', '_', '.' or '~' (not starting with '.'), or omit it for one derived from the contract and job",
		field, quoteValue(id))
}

// DerivedOperationID is the id an operation gets when its creator names
// none, so that the same request sent again resumes it instead of
// starting a second operation that polls the same job. fingerprint is
// the request's (policy.FingerprintVars). owner is the token that sends
// it through the daemon, or "" for a local process (wait, the stdio MCP
// server), whose authority is the store file: two tokens watching one
// provider job each get their own operation, and neither resumes (or
// learns of) the other's.
func DerivedOperationID(contractName, fingerprint, owner string) string {
	if owner == "" {
		return contractName + "-" + fingerprint[:12]
	}
	h := sha256.Sum256([]byte("owner\n" + owner + "\n" + fingerprint))
	return contractName + "-" + hex.EncodeToString(h[:])[:12]
}
