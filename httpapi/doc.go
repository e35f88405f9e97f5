// Package httpapi is the JSON API of `pollwarden serve`: the door through
// which agents hand jobs over, wait on them and ask for more, and through
// which approvers answer escalations (SPEC, "pollwarden serve").
//
// It re-implements no rule of the core and holds none of it: every route
// calls the one operations.Service its process built (Options.Ops), which
// creates (limits, deadlines), decides (R20), records extension requests
// (which grant nothing), verifies provider callbacks and counts the
// gauges; who may do what is that package's table (Caller.May). What this
// package adds is only what a door must: who is calling (bearer tokens by
// hash, from package tokens), strict request bodies, answers in the
// outcome field names, long-polls, metrics, and an OpenAPI description of
// all of it.
//
// Every answer is built from pollwarden.OutcomeOf or audit events, which
// name the credential and never carry the secret (R27); bearer tokens are
// hashed on arrival and never stored or logged.
package httpapi
