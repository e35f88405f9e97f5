// Package operations holds the use cases every door offers on an
// operation: create (wait, watch_job, POST /v1/operations), submit, read,
// list, wait for a change, request an extension, decide, cancel, abandon
// and fetch the result. Each takes what the door received as the user
// typed it, plus the Caller, and returns the record or Problems, so a rule
// is checked in one place and the CLI, the API, MCP and the console only
// translate flags, JSON and tool arguments in, and records, exit codes,
// status codes and tool errors out.
//
// The rules themselves live in package policy and their effects in
// package controller; this package checks the input, decides who may
// see and do what, and orders the calls.
package operations
