// Package pollwarden holds the vocabulary shared by every part of pollwarden:
// an Operation (the durable record of one external job being waited on), its
// limits and counters, the outcomes and escalation reasons, audit events,
// leases, and the Store interface that drivers implement.
//
// The package imports only the standard library so that the pure decision
// core (package policy), the drivers (sqlite, postgres) and the doors (cli,
// API, MCP) all speak the same types without depending on one another.
package pollwarden
