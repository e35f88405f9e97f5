// Package httpapi is the JSON API of `pollwarden serve`: the door through
// which agents hand jobs over, wait on them and ask for more, and through
// which approvers answer escalations (SPEC, "pollwarden serve").
//
// It re-implements no rule of the core. Creating an operation goes through
// controller.Submit and policy.NewOperation (limits, deadlines), decisions
// through controller.Decide and policy.Apply (R20), extension requests
// through controller.RequestExtension, which grants nothing. What this
// package adds is only what a door must: who is calling (bearer tokens by
// hash and roles, from package tokens), strict request bodies, answers in
// the outcome field names, long-polls woken by the controller's OnChange
// hook (package changes), metrics, and an OpenAPI description of all of it.
//
// Every answer is built from pollwarden.OutcomeOf or audit events, which
// name the credential and never carry the secret (R27); bearer tokens are
// hashed on arrival and never stored or logged.
package httpapi
