package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// ContractChange is what differs between the contract an operation was
// created under and c, a file of the same name read now, so that editing
// a contract is never silent: a wait taken up again either adopts c (when
// nothing can widen) or is refused with these words.
type ContractChange struct {
	// Changes says each change in words, "limits.max_status_requests 12 → 8".
	Changes []string
	// Adoptable is true when every change only lowers a limit: the
	// operation may go on under c, its limits lowered to c's, its counters
	// kept. Any other change (the state table, the status call and its
	// hosts, the credential, a raised limit) could widen what the
	// operation accepts or where it sends, and is refused.
	Adoptable bool
	// From and To are short digests of the two contracts, for the story.
	From, To string
}

// Changed reports whether there is anything to say.
func (ch ContractChange) Changed() bool { return len(ch.Changes) > 0 }

// sectionWords names a contract section for a person.
var sectionWords = map[string]string{
	"status":                 "the status call (its URL, method, headers, credential or allowed hosts)",
	"state":                  "the state table",
	"result":                 "the required result fields",
	"hints":                  "the provider hints",
	"not_found":              "not_found.pending_for",
	"backoff":                "the backoff",
	"limits":                 "the limits",
	"escalation.extension":   "escalation.extension",
	"escalation.console_url": "escalation.console_url",
	"cancel":                 "the cancel action",
}

// KeptLimits is the part of c's limits an operation keeps with its
// record, to compare a later edit of the file value by value.
func KeptLimits(c *pollwarden.ContractSpec) *pollwarden.ContractLimits {
	return &pollwarden.ContractLimits{Deadline: c.Limits.Deadline, MaxStatusRequests: c.Limits.MaxStatusRequests,
		MaxTransportFailures: c.Limits.MaxTransportFailures, MaxRateLimited: c.Limits.MaxRateLimited}
}

// CompareContract compares the contract op was created under with c. A
// record created before digests were kept has nothing to compare, and
// reports no change.
func CompareContract(op *pollwarden.Operation, c *pollwarden.ContractSpec) ContractChange {
	if op.ContractDigest == nil {
		return ContractChange{}
	}
	return CompareDigests(op, c, ContractDigest(c))
}

// CompareDigests is CompareContract with c's digests (ContractDigest)
// computed once by a caller that compares many operations with one
// contract (the daemon's scheduler).
func CompareDigests(op *pollwarden.Operation, c *pollwarden.ContractSpec, now map[string]string) ContractChange {
	if op.ContractDigest == nil || maps.Equal(op.ContractDigest, now) {
		return ContractChange{}
	}
	ch := ContractChange{Adoptable: true, From: digestText(op.ContractDigest), To: digestText(now)}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		if op.ContractDigest[name] == now[name] {
			continue
		}
		if name == "limits" {
			words, lowered := limitChanges(op.ContractLimits, KeptLimits(c))
			ch.Changes = append(ch.Changes, words...)
			ch.Adoptable = ch.Adoptable && lowered
			continue
		}
		ch.Adoptable = false
		if name == "status" && c.Status.Credential != nil && op.CredentialName != c.Status.Credential.Ref ||
			name == "status" && c.Status.Credential == nil && op.CredentialName != "" {
			ch.Changes = append(ch.Changes, fmt.Sprintf("credential %s → %s", credText(op.CredentialName), credText(credRef(c))))
		}
		ch.Changes = append(ch.Changes, sectionWords[name]+" changed")
	}
	for name := range op.ContractDigest {
		if _, ok := now[name]; !ok {
			ch.Adoptable = false
			ch.Changes = append(ch.Changes, name+" is unknown to this pollwarden")
		}
	}
	if len(ch.Changes) == 0 {
		ch.Adoptable = false
	}
	return ch
}

// limitChanges says each limit that differs, old → new; lowered is false
// when one is raised or when the old values are not on record (nothing
// then proves the change lowers them).
func limitChanges(old, now *pollwarden.ContractLimits) (words []string, lowered bool) {
	if old == nil {
		return []string{"the limits changed (the old values are not on record)"}, false
	}
	lowered = true
	add := func(name string, o, n int64, text func(int64) string) {
		if o == n {
			return
		}
		words = append(words, fmt.Sprintf("limits.%s %s → %s", name, text(o), text(n)))
		lowered = lowered && n < o
	}
	count := func(v int64) string { return fmt.Sprint(v) }
	add("deadline", int64(old.Deadline), int64(now.Deadline), func(v int64) string { return pollwarden.ShortDuration(time.Duration(v)) })
	add("max_status_requests", int64(old.MaxStatusRequests), int64(now.MaxStatusRequests), count)
	add("max_transport_failures", int64(old.MaxTransportFailures), int64(now.MaxTransportFailures), count)
	add("max_rate_limited", int64(old.MaxRateLimited), int64(now.MaxRateLimited), count)
	if len(words) == 0 {
		return []string{"the limits changed (the request rate or how transport failures are counted)"}, false
	}
	return words, lowered
}

// AdoptContract is op going on under c after an adoptable change (ch):
// each limit lowered to c's where c's is lower, counters untouched, the
// record now naming c's digests, and the event that says so. by is who
// took the wait up.
func AdoptContract(op *pollwarden.Operation, c *pollwarden.ContractSpec, ch ContractChange, now time.Time, by string) (*pollwarden.Operation, pollwarden.Event) {
	next := op.Clone()
	// Never below what is already used: a budget spent stays spent, and
	// "5 of 4" would tell a person nothing.
	next.MaxStatusRequests = max(min(next.MaxStatusRequests, c.Limits.MaxStatusRequests), next.StatusRequestsUsed)
	next.MaxTransportFailures = max(min(next.MaxTransportFailures, c.Limits.MaxTransportFailures), next.TransportFailuresUsed)
	next.MaxRateLimited = max(min(next.MaxRateLimited, c.Limits.MaxRateLimited), next.RateLimitedUsed)
	if dl := next.StartedAt.Add(c.Limits.Deadline); dl.Before(next.DeadlineAt) {
		next.DeadlineAt = dl
	}
	next.ContractDigest = ContractDigest(c)
	next.ContractLimits = KeptLimits(c)
	dl := next.DeadlineAt
	ev := newEvent(next, now, pollwarden.EventContractChanged, pollwarden.EventData{
		State: next.LastState, RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		DeadlineAt: &dl, Detail: fmt.Sprintf("%s (contract %s → %s); taken up by %s", strings.Join(ch.Changes, ", "), ch.From, ch.To, by),
	})
	return next, ev
}

// digestText is a short digest of a whole contract's section digests.
func digestText(d map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(d)) {
		fmt.Fprintf(h, "%s=%s\n", k, d[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func credRef(c *pollwarden.ContractSpec) string {
	if c.Status.Credential != nil {
		return c.Status.Credential.Ref
	}
	return ""
}

func credText(ref string) string {
	if ref == "" {
		return "none"
	}
	return ref
}
