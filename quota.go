package pollwarden

import "time"

// QuotaSpec is a contract's quota block: at most Requests credentialed
// requests (status, submit, cancel, result) in any window of Per, shared
// by every operation, process and replica on the store under one key.
type QuotaSpec struct {
	Requests int
	Per      time.Duration
	// Key is QuotaKeyCredential (the default) or QuotaKeyContract.
	Key string
	// RemainingHeader names the provider's own count of the requests left
	// (x-ratelimit-remaining); "" when the contract reads none.
	RemainingHeader string `json:",omitempty"`
}

// The kinds of quota key a contract may name.
const (
	// QuotaKeyCredential: every contract naming the same secret reference
	// shares one quota (the provider counts per credential).
	QuotaKeyCredential = "credential"
	// QuotaKeyContract: this contract alone.
	QuotaKeyContract = "contract"
)

// QuotaKey is the key of a contract's quota, learned holds and incidents:
// its credential's secret reference ("env:GITHUB_TOKEN", never the
// secret), or the contract's name when it has no credential or says
// key: contract. A name ([a-z0-9-]+) never holds the ":" every reference
// has, so the two kinds never share a key by accident.
func QuotaKey(c *ContractSpec) string {
	if c == nil {
		return ""
	}
	if c.Quota == nil || c.Quota.Key != QuotaKeyContract {
		if cr := c.Status.Credential; cr != nil && cr.Ref != "" {
			return cr.Ref
		}
	}
	return c.Name
}

// EffectivePriority is the operation's priority with 0 read as the
// default, 5.
func (o *Operation) EffectivePriority() int {
	if o.Priority < 1 || o.Priority > 9 {
		return 5
	}
	return o.Priority
}
