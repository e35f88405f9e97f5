package controller

import (
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// watchIncidents makes the claim's grant say, in *watch, whether the
// key's row has recent failures or an open incident: then every answer
// to the request counts for the incident rule (a valid answer forgets
// the failures, or closes the outage), and the save reads the key's row
// even when the answer teaches the quota nothing.
func watchIncidents(t *pollwarden.QuotaTake, watch *bool) *pollwarden.QuotaTake {
	grant := t.Grant
	t.Grant = func(ks *pollwarden.KeyState, op *pollwarden.Operation, at time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
		*watch = policy.IncidentWatching(ks)
		return grant(ks, op, at)
	}
	return t
}

// incidentNote is the save's lesson for the key of an answer that
// teaches the quota nothing but counts for the incident rule.
func incidentNote(ct *pollwarden.ContractSpec, op *pollwarden.Operation, obs *pollwarden.Observation) *pollwarden.QuotaNote {
	o := *obs
	return &pollwarden.QuotaNote{Key: pollwarden.QuotaKey(ct), Note: func(ks *pollwarden.KeyState, now time.Time) *pollwarden.KeyState {
		next, _ := policy.KeyNote(ks, op, ct, o, now)
		return next
	}}
}
