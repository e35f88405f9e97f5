// Package contract reads a provider contract file (YAML or JSON, version 1)
// into the plain-data pollwarden.ContractSpec, and applies the contract's
// JMESPath expressions to status response bodies.
//
// It exists so that nothing else in pollwarden parses provider specifics:
// the decision core sees only a validated Contract and the BodyFacts a
// Loaded contract reduced a body to. Parsing is strict and exhaustive because a
// contract decides what counts as success and how much authority a poller
// has: an unknown key or a loose value is more likely a mistake than an
// intent, and an operator fixing a file wants every problem, with its line,
// at once. A contract names where a secret lives, never the secret itself.
package contract
